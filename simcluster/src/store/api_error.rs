//! API errors and the `meta.k8s.io/v1` `Status` objects they become on the wire.

use serde_json::{Value, json};

/// One field-level problem inside an `Invalid` error (`details.causes[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueForbidden`, …
    pub reason: &'static str,
    /// The field path, e.g. `spec.containers[0].image`.
    pub field: String,
    /// The message after the field path, e.g. `Required value`.
    pub message: String,
}

impl Cause {
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Self {
            reason: "FieldValueRequired",
            field: field.into(),
            message,
        }
    }

    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {value:?}: {detail}"),
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    pub fn unsupported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!("Unsupported value: {value:?}: supported values: {list}"),
        }
    }
}

/// An error answered by the API server. Every variant renders as a `Status` object with the
/// reason, code and message shape of the upstream apiserver (`apimachinery/pkg/api/errors`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("{} {name:?} not found", qualified(.resource, .group))]
    NotFound {
        group: String,
        resource: String,
        name: String,
    },
    #[error("{} {name:?} already exists", qualified(.resource, .group))]
    AlreadyExists {
        group: String,
        resource: String,
        name: String,
    },
    #[error(
        "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
        qualified(.resource, .group)
    )]
    Conflict {
        group: String,
        resource: String,
        name: String,
    },
    #[error("Operation cannot be fulfilled on {} {name:?}: {reason}", qualified(.resource, .group))]
    Precondition {
        group: String,
        resource: String,
        name: String,
        reason: String,
    },
    #[error("{} {name:?} is invalid: {}", qualified(.kind, .group), render_causes(.causes))]
    Invalid {
        group: String,
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    #[error("{0}")]
    BadRequest(String),
    /// `pods "p" is forbidden: …`; without a name `pods is forbidden: …`, and without a
    /// resource (a non-resource URL) `forbidden: …`, as `NewForbidden` words them.
    #[error("{}", forbidden(.resource, .group, .name, .reason))]
    Forbidden {
        group: String,
        resource: String,
        name: String,
        reason: String,
    },
    #[error("Unauthorized")]
    Unauthorized,
    #[error("{verb} is not supported on resources of kind {kind:?}")]
    MethodNotAllowed { verb: String, kind: String },
    #[error("the server could not find the requested resource")]
    UnknownPath,
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    NotAcceptable(String),
    #[error("the request body is too large: limit is {limit} bytes")]
    TooLarge { limit: usize },
    #[error("too old resource version: {requested} ({oldest})")]
    Expired { requested: u64, oldest: u64 },
    /// A list's continue token outlived the revision it reads at (kube-apiserver's wording).
    #[error(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
    )]
    ContinueExpired,
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// A validating admission webhook refused the request: the apiserver relays its status code
    /// (at least 400) and reason (empty when the webhook set none: the Status then has no
    /// `reason`) and prefixes its message (`webhook/errors/statuserror.go`, `ToStatusErr`).
    #[error("admission webhook {webhook:?} denied the request: {message}")]
    WebhookDenied {
        webhook: String,
        message: String,
        code: u16,
        reason: &'static str,
    },
    /// A ValidatingAdmissionPolicy refused the request: worded as `NewForbidden` words it
    /// (`pods "p" is forbidden: ValidatingAdmissionPolicy '…' …`), but with the validation's
    /// reason — `Invalid` (422) when it sets none, as the policies here do — and the denial
    /// again as a cause (`admission/plugin/policy/validating/dispatcher.go`, `Dispatch`).
    #[error("{}", forbidden(.resource, .group, .name, .message))]
    PolicyDenied {
        group: String,
        resource: String,
        name: String,
        message: String,
    },
}

/// `pods`, or `deployments.apps` for a named group, as upstream messages print them.
fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn forbidden(resource: &str, group: &str, name: &str, reason: &str) -> String {
    if resource.is_empty() {
        format!("forbidden: {reason}")
    } else if name.is_empty() {
        format!("{} is forbidden: {reason}", qualified(resource, group))
    } else {
        format!("{} {name:?} is forbidden: {reason}", qualified(resource, group))
    }
}

/// `NewForbidden`'s details, without the empty fields.
fn forbidden_details(group: &str, resource: &str, name: &str) -> serde_json::Map<String, Value> {
    let mut d = serde_json::Map::new();
    for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
        if !v.is_empty() {
            d.insert(k.into(), json!(v));
        }
    }
    d
}

fn render_causes(causes: &[Cause]) -> String {
    let parts: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    if parts.len() == 1 {
        parts.join("")
    } else {
        format!("[{}]", parts.join(", "))
    }
}

impl ApiError {
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::NotFound {
            group: group.into(),
            resource: resource.into(),
            name: name.into(),
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        match self {
            Self::NotFound { .. } | Self::UnknownPath => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } | Self::Precondition { .. } => 409,
            Self::Invalid { .. } | Self::PolicyDenied { .. } => 422,
            Self::BadRequest(_) => 400,
            Self::Forbidden { .. } => 403,
            Self::Unauthorized => 401,
            Self::MethodNotAllowed { .. } => 405,
            Self::UnsupportedMediaType(_) => 415,
            Self::NotAcceptable(_) => 406,
            Self::TooLarge { .. } => 413,
            Self::Expired { .. } | Self::ContinueExpired => 410,
            Self::Internal(_) => 500,
            Self::WebhookDenied { code, .. } => *code,
        }
    }

    /// The machine-readable `reason` of the Status.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::UnknownPath => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } | Self::Precondition { .. } => "Conflict",
            Self::Invalid { .. } | Self::PolicyDenied { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::Forbidden { .. } => "Forbidden",
            Self::Unauthorized => "Unauthorized",
            Self::MethodNotAllowed { .. } => "MethodNotAllowed",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Self::NotAcceptable(_) => "NotAcceptable",
            Self::TooLarge { .. } => "RequestEntityTooLarge",
            Self::Expired { .. } | Self::ContinueExpired => "Expired",
            Self::Internal(_) => "InternalError",
            Self::WebhookDenied { reason, .. } => reason,
        }
    }

    /// The full `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code(),
        });
        // `reason` is `omitempty` upstream: a webhook that sets none leaves the Status without it.
        if self.reason().is_empty()
            && let Some(obj) = status.as_object_mut()
        {
            obj.remove("reason");
        }
        let details = match self {
            Self::NotFound { group, resource, name }
            | Self::AlreadyExists { group, resource, name }
            | Self::Conflict { group, resource, name }
            | Self::Precondition {
                group, resource, name, ..
            } => Some(json!({"name": name, "group": group, "kind": resource})),
            // Upstream leaves out the empty fields (`"details":{"kind":"pods"}`).
            Self::Forbidden {
                group, resource, name, ..
            } => Some(Value::Object(forbidden_details(group, resource, name))),
            Self::PolicyDenied {
                group,
                resource,
                name,
                message,
            } => {
                let mut d = forbidden_details(group, resource, name);
                d.insert("causes".into(), json!([{"message": message}]));
                Some(Value::Object(d))
            }
            Self::Invalid {
                group,
                kind,
                name,
                causes,
            } => Some(json!({
                "name": name,
                "group": group,
                "kind": kind,
                "causes": causes.iter().map(|c| json!({
                    "reason": c.reason,
                    "message": c.message,
                    "field": c.field,
                })).collect::<Vec<_>>(),
            })),
            Self::Internal(msg) => Some(json!({"causes": [{"message": msg}]})),
            _ => None,
        };
        if let (Some(details), Some(obj)) = (details, status.as_object_mut()) {
            obj.insert("details".into(), details);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(ApiError::not_found("", "pods", "x"), 404, "NotFound", r#"pods "x" not found"#)]
    #[case(
        ApiError::AlreadyExists { group: "apps".into(), resource: "deployments".into(), name: "web".into() },
        409, "AlreadyExists", r#"deployments.apps "web" already exists"#
    )]
    #[case(
        ApiError::Conflict { group: "".into(), resource: "pods".into(), name: "p".into() },
        409, "Conflict",
        r#"Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again"#
    )]
    #[case(
        ApiError::Invalid { group: "".into(), kind: "Pod".into(), name: "p".into(),
            causes: vec![Cause::required("spec.containers[0].image", "")] },
        422, "Invalid", r#"Pod "p" is invalid: spec.containers[0].image: Required value"#
    )]
    #[case(ApiError::UnsupportedMediaType("x".into()), 415, "UnsupportedMediaType", "x")]
    #[case(
        ApiError::Forbidden { group: "".into(), resource: "pods".into(), name: "".into(), reason: "no".into() },
        403, "Forbidden", "pods is forbidden: no"
    )]
    #[case(
        ApiError::Forbidden { group: "apps".into(), resource: "deployments".into(), name: "d".into(), reason: "no".into() },
        403, "Forbidden", r#"deployments.apps "d" is forbidden: no"#
    )]
    #[case(
        ApiError::Forbidden { group: "".into(), resource: "".into(), name: "".into(), reason: "no".into() },
        403, "Forbidden", "forbidden: no"
    )]
    #[case(ApiError::Expired { requested: 3, oldest: 9 }, 410, "Expired", "too old resource version: 3 (9)")]
    #[case(
        ApiError::WebhookDenied { webhook: "validation.gatekeeper.sh".into(), message: "[c] no".into(), code: 403, reason: "Forbidden" },
        403, "Forbidden", r#"admission webhook "validation.gatekeeper.sh" denied the request: [c] no"#
    )]
    #[case(
        ApiError::PolicyDenied { group: "".into(), resource: "pods".into(), name: "p".into(),
            message: "ValidatingAdmissionPolicy 'v' with binding 'b' denied request: no".into() },
        422, "Invalid", r#"pods "p" is forbidden: ValidatingAdmissionPolicy 'v' with binding 'b' denied request: no"#
    )]
    fn status_shape(#[case] err: ApiError, #[case] code: u16, #[case] reason: &str, #[case] message: &str) {
        let status = err.to_status();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["code"], code);
        assert_eq!(status["reason"], reason);
        assert_eq!(status["message"], message);
    }

    #[test]
    fn forbidden_details_leave_out_empty_fields() {
        let err = ApiError::Forbidden {
            group: String::new(),
            resource: "pods".into(),
            name: String::new(),
            reason: "x".into(),
        };
        assert_eq!(err.to_status()["details"], json!({"kind": "pods"}));
        let err = ApiError::Forbidden {
            group: String::new(),
            resource: String::new(),
            name: String::new(),
            reason: "x".into(),
        };
        assert_eq!(err.to_status()["details"], json!({}));
    }

    /// A webhook that sets no reason (Kyverno) leaves the Status without one; its code stays.
    #[test]
    fn a_webhook_without_reason_has_none_on_the_wire() {
        let err = ApiError::WebhookDenied {
            webhook: "validate.kyverno.svc-fail".into(),
            message: "no".into(),
            code: 400,
            reason: "",
        };
        let status = err.to_status();
        assert_eq!(status["code"], 400);
        assert!(status.get("reason").is_none(), "{status}");
        assert!(status.get("details").is_none(), "{status}");
    }

    /// A ValidatingAdmissionPolicy's denial keeps `NewForbidden`'s details and adds the denial
    /// as a cause.
    #[test]
    fn a_policy_denial_names_its_message_as_a_cause() {
        let err = ApiError::PolicyDenied {
            group: String::new(),
            resource: "pods".into(),
            name: "p".into(),
            message: "ValidatingAdmissionPolicy 'v' with binding 'b' denied request: no".into(),
        };
        assert_eq!(
            err.to_status()["details"],
            json!({"name": "p", "kind": "pods",
                   "causes": [{"message": "ValidatingAdmissionPolicy 'v' with binding 'b' denied request: no"}]})
        );
    }

    #[test]
    fn invalid_lists_every_cause() {
        let err = ApiError::Invalid {
            group: String::new(),
            kind: "Pod".into(),
            name: "p".into(),
            causes: vec![
                Cause::required("spec.containers", ""),
                Cause::invalid("metadata.name", "A", "bad"),
            ],
        };
        let status = err.to_status();
        assert_eq!(status["details"]["causes"][1]["reason"], "FieldValueInvalid");
        assert!(err.to_string().starts_with(r#"Pod "p" is invalid: ["#));
    }
}
