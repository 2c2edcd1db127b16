//! What a request asks to do, read from its method, path and query the way the apiserver's
//! `RequestInfoFactory` reads it (before any routing, so a request for a resource the cluster
//! does not serve is authorized like any other), and the `Forbidden` answer when the authorizer
//! says no (`responsewriters.Forbidden`).
//!
//! The verb: `POST` create, `GET`/`HEAD` get — list without a name, watch with `watch=true` —,
//! `PUT` update, `PATCH` patch, `DELETE` delete — deletecollection without a name —; the legacy
//! `/api/v1/watch/…` and `/api/v1/proxy/…` prefixes give their own verb. A list or watch whose
//! field selector pins `metadata.name` is authorized for that name. `/api/v1/namespaces/NS` is
//! a request in namespace `NS` (so a RoleBinding there can grant `get` on its own namespace).
//! Anything outside `/api/VERSION/…` and `/apis/GROUP/VERSION/…` is a non-resource URL, its
//! verb the lowercased method.

use axum::http::Method;

use crate::api::authorization::{Attributes, UserInfo};
use crate::store::api_error::ApiError;

/// Subresources of a namespace itself (`/api/v1/namespaces/NS/status`).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Go's `strconv.ParseBool` truth, as the `watch` parameter is decoded.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The query's `watch` (the first value), and the name a `metadata.name` field selector pins.
fn list_options(query: Option<&str>) -> (bool, Option<String>) {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let first = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let watch = match first("watch") {
        None => false,
        // An unparsable value still asks for a watch unless it reads as false.
        Some(v) => parse_bool(v).unwrap_or(!matches!(v.to_ascii_lowercase().as_str(), "false" | "0")),
    };
    let name = first("fieldSelector").and_then(|selector| {
        selector.split(',').find_map(|term| {
            let value = term
                .trim()
                .strip_prefix("metadata.name==")
                .or_else(|| term.trim().strip_prefix("metadata.name="))?;
            let ok = !value.is_empty()
                && !value.starts_with('=')
                && crate::store::rbac::path_segment_problems(value).is_empty();
            ok.then(|| value.to_string())
        })
    });
    (watch, name)
}

/// The attributes of a request, as the authorizer gets them.
pub(crate) fn attributes(method: &Method, path: &str, query: Option<&str>) -> Attributes {
    let non_resource = || Attributes::NonResource {
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_string(),
    };
    let trimmed = path.trim_matches('/');
    let all: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    if all.len() < 3 {
        return non_resource();
    }
    let (group, rest) = match all.as_slice() {
        ["api", rest @ ..] => ("", rest),
        ["apis", rest @ ..] if rest.len() >= 3 => (rest[0], &rest[1..]),
        _ => return non_resource(),
    };
    let Some((version, mut parts)) = rest.split_first() else {
        return non_resource();
    };
    let mut verb = match parts.first().copied() {
        Some(special @ ("proxy" | "watch")) => {
            if parts.len() < 2 {
                return non_resource();
            }
            parts = &parts[1..];
            special.to_string()
        }
        _ => match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string(),
    };
    let mut namespace = "";
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        namespace = parts[1];
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts = &parts[2..];
        }
    }
    let resource = parts.first().copied().unwrap_or("");
    let mut name = parts.get(1).copied().unwrap_or("").to_string();
    let subresource = if verb != "proxy" {
        parts.get(2).copied().unwrap_or("")
    } else {
        ""
    };
    if name.is_empty() && verb == "get" {
        let (watch, pinned) = list_options(query);
        verb = if watch { "watch" } else { "list" }.into();
        if let Some(n) = pinned {
            name = n;
        }
    }
    if name.is_empty() && verb == "delete" {
        verb = "deletecollection".into();
    }
    Attributes::Resource {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        resource: resource.to_string(),
        subresource: subresource.to_string(),
        namespace: namespace.to_string(),
        name,
    }
}

/// The `Forbidden` error of a denied request: `pods "p" is forbidden: User "u" cannot get
/// resource "pods" in API group "" in the namespace "ns"`, `… at the cluster scope`,
/// `forbidden: User "u" cannot get path "/x"`; the authorizer's reason, when it gave one, after
/// a colon.
pub(crate) fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let username = &user.username;
    let (message, group, resource, name) = match attributes {
        Attributes::NonResource { verb, path } => {
            (format!("User {username:?} cannot {verb} path {path:?}"), "", "", "")
        }
        Attributes::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
            ..
        } => {
            let what = if subresource.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{subresource}")
            };
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {namespace:?}")
            };
            (
                format!("User {username:?} cannot {verb} resource {what:?} in API group {group:?} {scope}"),
                group.as_str(),
                resource.as_str(),
                name.as_str(),
            )
        }
    };
    ApiError::Forbidden {
        group: group.into(),
        resource: resource.into(),
        name: name.into(),
        reason: if reason.is_empty() {
            message
        } else {
            format!("{message}: {reason}")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[rstest]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods",
        None,
        resource("list", "", "pods", "", "a", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods",
        Some("watch=true"),
        resource("watch", "", "pods", "", "a", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods",
        Some("watch=1&labelSelector=x"),
        resource("watch", "", "pods", "", "a", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods",
        Some("watch=false"),
        resource("list", "", "pods", "", "a", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods",
        Some("fieldSelector=metadata.name%3Dp&watch=true"),
        resource("watch", "", "pods", "", "a", "p")
    )]
    #[case(
        Method::GET,
        "/api/v1/pods",
        Some("fieldSelector=spec.nodeName%3Dn1"),
        resource("list", "", "pods", "", "", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods/p",
        None,
        resource("get", "", "pods", "", "a", "p")
    )]
    #[case(
        Method::HEAD,
        "/api/v1/namespaces/a/pods/p",
        None,
        resource("get", "", "pods", "", "a", "p")
    )]
    #[case(
        Method::POST,
        "/api/v1/namespaces/a/pods",
        None,
        resource("create", "", "pods", "", "a", "")
    )]
    #[case(
        Method::PUT,
        "/apis/apps/v1/namespaces/a/deployments/d/scale",
        None,
        resource("update", "apps", "deployments", "scale", "a", "d")
    )]
    #[case(
        Method::PATCH,
        "/api/v1/namespaces/a/pods/p/status",
        None,
        resource("patch", "", "pods", "status", "a", "p")
    )]
    #[case(
        Method::DELETE,
        "/api/v1/namespaces/a/pods/p",
        None,
        resource("delete", "", "pods", "", "a", "p")
    )]
    #[case(
        Method::DELETE,
        "/api/v1/namespaces/a/pods",
        None,
        resource("deletecollection", "", "pods", "", "a", "")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods/p/exec",
        Some("command=ls"),
        resource("get", "", "pods", "exec", "a", "p")
    )]
    #[case(
        Method::POST,
        "/api/v1/namespaces/a/pods/p/exec",
        None,
        resource("create", "", "pods", "exec", "a", "p")
    )]
    #[case(
        Method::GET,
        "/api/v1/namespaces/a/pods/p/log",
        None,
        resource("get", "", "pods", "log", "a", "p")
    )]
    #[case(
        Method::GET,
        "/api/v1/nodes/n1/proxy/configz",
        None,
        resource("get", "", "nodes", "proxy", "", "n1")
    )]
    #[case(Method::GET, "/api/v1/nodes", None, resource("list", "", "nodes", "", "", ""))]
    #[case::own_namespace(
        Method::GET,
        "/api/v1/namespaces/a",
        None,
        resource("get", "", "namespaces", "", "a", "a")
    )]
    #[case(
        Method::PUT,
        "/api/v1/namespaces/a/finalize",
        None,
        resource("update", "", "namespaces", "finalize", "a", "a")
    )]
    #[case(
        Method::POST,
        "/api/v1/namespaces",
        None,
        resource("create", "", "namespaces", "", "", "")
    )]
    #[case(
        Method::POST,
        "/api/v1/namespaces/a/serviceaccounts/sa/token",
        None,
        resource("create", "", "serviceaccounts", "token", "a", "sa")
    )]
    #[case(
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        None,
        resource("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "")
    )]
    #[case::unserved(
        Method::GET,
        "/apis/policy/v1/namespaces/a/poddisruptionbudgets",
        None,
        resource("list", "policy", "poddisruptionbudgets", "", "a", "")
    )]
    #[case::legacy_watch(
        Method::GET,
        "/api/v1/watch/namespaces/a/pods/p",
        None,
        resource("watch", "", "pods", "", "a", "p")
    )]
    fn resource_requests(
        #[case] method: Method,
        #[case] path: &str,
        #[case] query: Option<&str>,
        #[case] expected: Attributes,
    ) {
        assert_eq!(attributes(&method, path, query), expected, "{method} {path}");
    }

    #[rstest]
    #[case(Method::GET, "/version", "get")]
    #[case(Method::GET, "/healthz", "get")]
    #[case(Method::GET, "/api", "get")]
    #[case(Method::GET, "/api/v1", "get")]
    #[case(Method::GET, "/apis", "get")]
    #[case(Method::GET, "/apis/apps", "get")]
    #[case(Method::GET, "/apis/apps/v1", "get")]
    #[case(Method::GET, "/openapi/v3/apis/apps/v1", "get")]
    #[case(Method::POST, "/logs", "post")]
    #[case(Method::GET, "/", "get")]
    fn non_resource_requests(#[case] method: Method, #[case] path: &str, #[case] verb: &str) {
        assert_eq!(
            attributes(&method, path, None),
            Attributes::NonResource {
                verb: verb.into(),
                path: path.into()
            }
        );
    }

    fn sa() -> UserInfo {
        UserInfo {
            username: "system:serviceaccount:mixcheck:mixcheck".into(),
            uid: String::new(),
            groups: Vec::new(),
        }
    }

    #[rstest]
    #[case::namespaced(resource("create", "", "pods", "", "x", ""), "",
        r#"pods is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot create resource "pods" in API group "" in the namespace "x""#)]
    #[case::named(resource("get", "", "pods", "", "x", "p"), "",
        r#"pods "p" is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot get resource "pods" in API group "" in the namespace "x""#)]
    #[case::subresource(resource("create", "", "pods", "exec", "x", "p"), "",
        r#"pods "p" is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot create resource "pods/exec" in API group "" in the namespace "x""#)]
    #[case::cluster_scope(resource("list", "", "nodes", "", "", ""), "",
        r#"nodes is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot list resource "nodes" in API group "" at the cluster scope"#)]
    #[case::group(resource("delete", "apps", "deployments", "", "x", "web"), "",
        r#"deployments.apps "web" is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot delete resource "deployments" in API group "apps" in the namespace "x""#)]
    #[case::non_resource(Attributes::NonResource { verb: "get".into(), path: "/logs".into() }, "",
        r#"forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot get path "/logs""#)]
    #[case::with_reason(resource("list", "", "secrets", "", "x", ""), r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#,
        r#"secrets is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot list resource "secrets" in API group "" in the namespace "x": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#)]
    fn forbidden_messages(#[case] attributes: Attributes, #[case] reason: &str, #[case] message: &str) {
        let err = forbidden(&sa(), &attributes, reason);
        assert_eq!(err.code(), 403);
        assert_eq!(err.to_string(), message);
        let status = err.to_status();
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["status"], "Failure");
        if let Attributes::Resource { resource, .. } = &attributes {
            assert_eq!(status["details"]["kind"], resource.as_str());
        }
    }

    #[test]
    fn the_status_is_upstreams() {
        let status = forbidden(&sa(), &resource("create", "", "pods", "", "x", ""), "").to_status();
        assert_eq!(
            status,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": r#"pods is forbidden: User "system:serviceaccount:mixcheck:mixcheck" cannot create resource "pods" in API group "" in the namespace "x""#,
                "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403,
            })
        );
    }
}
