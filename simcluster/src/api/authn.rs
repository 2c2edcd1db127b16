//! The filters every request passes before it is served, in the apiserver's order:
//! authentication (the admin's bearer token, or a service-account token the cluster issued),
//! impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-*`, each checked as the `impersonate` verb), then authorization of the
//! request's attributes ([`requestinfo`](super::requestinfo)) by the cluster's authorizer.
//! Every path is covered: discovery, OpenAPI, `/version`, health, resources, subresources,
//! watches, reviews, exec, logs and the node proxy.
//!
//! A service-account token authenticates as `system:serviceaccount:NS:NAME` in the groups
//! `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`, while it
//! has not expired, its audiences include the API server's, its ServiceAccount still exists
//! with the uid it was issued for, and the object it is bound to (if any) still exists. Any
//! other token, or none, is 401 (anonymous requests are not enabled).
//!
//! `pods/exec`, `pods/attach` and `pods/portforward` opened with a `GET` (the WebSocket
//! upgrade) are authorized as `get`, the verb of a `GET`; from Kubernetes 1.35
//! (`AuthorizePodWebsocketUpgradeCreatePermission`, beta and on by default there) the request
//! must also be allowed to `create` the subresource, the verb the SPDY `POST` always needed.
//! The cluster follows its version: before 1.35 `get` suffices.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;

use super::requestinfo::{attributes, forbidden};
use super::{ApiState, Shared};
use crate::api::authorization::{Attributes, UserInfo};
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::tokens::ISSUER;

/// The version from which connecting to a pod's exec, attach or portforward also needs `create`.
const CONNECT_CREATE_FROM: (u32, u32) = (1, 35);

const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// Authenticates, applies impersonation and authorizes a request; the identity it runs as goes
/// into the request's extensions for the handlers (reviews answer for it).
pub(crate) async fn guard(State(state): State<ApiState>, mut req: Request, next: Next) -> Response {
    let user = match authenticate(&state, req.headers()) {
        Ok(user) => user,
        Err(e) => return e.into_response(),
    };
    let user = match impersonate(&state, user, req.headers()) {
        Ok(user) => user,
        Err(Refused::Forbidden(e)) => return e.into_response(),
        Err(Refused::WithoutUser(message)) => return internal_error(&req.uri().to_string(), &message),
    };
    let wanted = attributes(req.method(), req.uri().path(), req.uri().query());
    if let Err(e) = authorize(&state, &user, &wanted) {
        return e.into_response();
    }
    if let Some(create) = connect_create(&state, req.method(), &wanted)
        && let Err(e) = authorize(&state, &user, &create)
    {
        return e.into_response();
    }
    let headers = req.headers_mut();
    let extra: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(IMPERSONATE_EXTRA))
        .cloned()
        .collect();
    for name in extra {
        headers.remove(name);
    }
    for name in [IMPERSONATE_USER, IMPERSONATE_GROUP, IMPERSONATE_UID] {
        headers.remove(name);
    }
    req.extensions_mut().insert(user);
    next.run(req).await
}

fn authorize(state: &Shared, user: &UserInfo, wanted: &Attributes) -> Result<(), ApiError> {
    let d = state.authorizer.authorize(user, wanted);
    if d.allowed {
        Ok(())
    } else {
        Err(forbidden(user, wanted, &d.reason))
    }
}

/// The extra `create` check of a `GET` on a pod's exec, attach or portforward (1.35 and later).
fn connect_create(state: &Shared, method: &Method, wanted: &Attributes) -> Option<Attributes> {
    if state.cluster_version < CONNECT_CREATE_FROM || *method != Method::GET {
        return None;
    }
    match wanted {
        Attributes::Resource {
            group,
            resource,
            subresource,
            ..
        } if group.is_empty()
            && resource == "pods"
            && matches!(subresource.as_str(), "exec" | "attach" | "portforward") =>
        {
            let mut create = wanted.clone();
            if let Attributes::Resource { verb, .. } = &mut create {
                *verb = "create".into();
            }
            Some(create)
        }
        _ => None,
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Who the bearer token is.
fn authenticate(state: &Shared, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or(ApiError::Unauthorized)?;
    if constant_time_eq(token.as_bytes(), state.token.as_bytes()) {
        return Ok(state.admin.clone());
    }
    service_account(state, token).ok_or(ApiError::Unauthorized)
}

/// The identity of a service-account token, while it is valid.
fn service_account(state: &Shared, token: &str) -> Option<UserInfo> {
    let issued = state.store.tokens().lookup(token)?;
    if issued.expires <= Utc::now() || !issued.audiences.iter().any(|a| a == ISSUER) {
        return None;
    }
    let account = state
        .store
        .get(resources::core("serviceaccounts"), &issued.namespace, &issued.name)
        .ok()?;
    if account.uid() != issued.uid {
        return None;
    }
    if let Some(bound) = &issued.bound {
        let (plural, ns) = match bound.kind.as_str() {
            "Pod" => ("pods", issued.namespace.as_str()),
            "Secret" => ("secrets", issued.namespace.as_str()),
            _ => ("nodes", ""),
        };
        let obj = state.store.get(resources::core(plural), ns, &bound.name).ok()?;
        if obj.uid() != bound.uid {
            return None;
        }
    }
    Some(service_account_user(&issued.namespace, &issued.name, &issued.uid))
}

/// The identity of service account `name` in `ns`.
pub(crate) fn service_account_user(ns: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{ns}:{name}"),
        uid: uid.to_string(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated".into(),
        ],
    }
}

/// One thing a request asks to act as, and how Go prints it in an error (`%v` of the
/// `ObjectReference`: kind, namespace, name, uid, apiVersion, resourceVersion, fieldPath).
struct Impersonation {
    attributes: Attributes,
    go: String,
}

fn impersonation(resource: &str, group: &str, namespace: &str, name: &str, sub: &str, go: String) -> Impersonation {
    Impersonation {
        attributes: Attributes::Resource {
            verb: "impersonate".into(),
            group: group.into(),
            version: String::new(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: namespace.into(),
            name: name.into(),
        },
        go,
    }
}

/// `system:serviceaccount:NS:NAME` split, as `serviceaccount.SplitUsername` does.
fn split_service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

fn internal_error(uri: &str, message: &str) -> Response {
    let mut resp = Response::new(Body::from(format!("Internal Server Error: {uri:?}: {message}\n")));
    *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Applies the impersonation headers: each thing asked for must be allowed to `user` as the
/// `impersonate` verb (users, groups, service accounts, uids, user extras), else 403. The new
/// identity: the user (a service account gets its groups when none are asked for), the groups
/// asked for, and `system:authenticated` unless it or `system:unauthenticated` is among them.
/// Why impersonation was refused.
#[derive(Debug, thiserror::Error)]
enum Refused {
    /// The caller may not impersonate what it asked for (403).
    #[error(transparent)]
    Forbidden(#[from] ApiError),
    /// Groups, a uid or extras without a user: upstream answers 500 with this text.
    #[error("{0}")]
    WithoutUser(String),
}

fn impersonate(state: &Shared, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, Refused> {
    let text = |v: &HeaderValue| v.to_str().ok().map(str::to_string);
    let requested_user = headers.get(IMPERSONATE_USER).and_then(text).filter(|u| !u.is_empty());
    let groups: Vec<String> = headers.get_all(IMPERSONATE_GROUP).iter().filter_map(text).collect();
    let uid = headers.get(IMPERSONATE_UID).and_then(text).filter(|u| !u.is_empty());
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix(IMPERSONATE_EXTRA)?;
            Some((key.to_ascii_lowercase(), text(v)?))
        })
        .collect();
    if requested_user.is_none() && groups.is_empty() && uid.is_none() && extras.is_empty() {
        return Ok(user);
    }
    let mut requests = Vec::new();
    if let Some(u) = &requested_user {
        requests.push(match split_service_account(u) {
            Some((ns, name)) => impersonation(
                "serviceaccounts",
                "",
                ns,
                name,
                "",
                format!("{{ServiceAccount {ns} {name}    }}"),
            ),
            None => impersonation("users", "", "", u, "", format!("{{User  {u}    }}")),
        });
    }
    for g in &groups {
        requests.push(impersonation("groups", "", "", g, "", format!("{{Group  {g}    }}")));
    }
    if let Some(u) = &uid {
        requests.push(impersonation(
            "uids",
            "authentication.k8s.io",
            "",
            u,
            "",
            format!("{{UID  {u}  authentication.k8s.io/v1  }}"),
        ));
    }
    for (key, value) in &extras {
        requests.push(impersonation(
            "userextras",
            "authentication.k8s.io",
            "",
            value,
            key,
            format!("{{UserExtra  {value}  authentication.k8s.io/v1  {key}}}"),
        ));
    }
    let Some(username) = requested_user else {
        let all: Vec<&str> = requests.iter().map(|r| r.go.as_str()).collect();
        return Err(Refused::WithoutUser(format!(
            "requested [{}] without impersonating a user",
            all.join(" ")
        )));
    };
    for r in &requests {
        authorize(state, &user, &r.attributes)?;
    }
    let mut new_groups = Vec::new();
    if groups.is_empty()
        && let Some((ns, _)) = split_service_account(&username)
    {
        new_groups.push("system:serviceaccounts".to_string());
        new_groups.push(format!("system:serviceaccounts:{ns}"));
    }
    new_groups.extend(groups);
    if username != "system:anonymous"
        && !new_groups
            .iter()
            .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        new_groups.push("system:authenticated".into());
    }
    Ok(UserInfo {
        username,
        uid: uid.unwrap_or_default(),
        groups: new_groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("system:serviceaccount:mixcheck:runner", Some(("mixcheck", "runner")))]
    #[case("system:serviceaccount:mixcheck", None)]
    #[case("system:serviceaccount::runner", None)]
    #[case("system:serviceaccount:a:b:c", None)]
    #[case("alice", None)]
    fn service_account_usernames(#[case] username: &str, #[case] expected: Option<(&str, &str)>) {
        assert_eq!(split_service_account(username), expected);
    }

    #[test]
    fn a_service_account_identity() {
        let u = service_account_user("mixcheck", "mixcheck", "u1");
        assert_eq!(u.username, "system:serviceaccount:mixcheck:mixcheck");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:mixcheck",
                "system:authenticated"
            ]
        );
        assert_eq!(u.uid, "u1");
    }
}
