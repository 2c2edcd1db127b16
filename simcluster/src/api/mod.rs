//! The HTTP front of the bundled cluster: routing, authentication and authorization of every
//! request ([`authn`]), content negotiation and the Kubernetes path grammar; the verbs live in
//! the submodules.

pub mod authorization;
pub mod discovery;
pub mod kubeconfig;
pub mod openapi;
pub mod protobuf;
pub mod rbac;
pub mod table;
pub mod tls;

mod attach;
mod authn;
pub mod custom;
mod exec;
mod logs;
mod metrics;
mod nodeproxy;
pub mod paging;
mod pfchannel;
mod portforward;
mod requestinfo;
mod resource;
mod reviews;
mod scale;
mod spdy;
mod token;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;

use crate::api::authorization::{Authorizer, UserInfo};
use crate::node::logs::LogBook;
use crate::node::runtime::ContainerRuntime;
use crate::store::Store;
use crate::store::api_error::ApiError;
use crate::store::resources::{self, ResourceType};

/// The largest request body accepted (the apiserver's limit is 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// What the handlers share.
#[derive(Debug)]
pub struct Shared {
    pub store: Arc<Store>,
    pub logs: Arc<LogBook>,
    pub runtime: Arc<dyn ContainerRuntime>,
    /// The `/version` document.
    pub version: Value,
    pub token: String,
    pub openapi_hash: String,
    pub bookmark_interval: Duration,
    /// The simulated nodes (their kubelets' configz and logs).
    pub profiles: Arc<Vec<crate::config::profile::NodeProfile>>,
    /// The API server's `major.minor` (version-dependent validation).
    pub cluster_version: (u32, u32),
    /// ClusterIP and NodePort allocation.
    pub allocator: Arc<crate::store::allocation::Allocator>,
    /// Who the admin's bearer token is.
    pub admin: UserInfo,
    /// What identities may do: every request is put to it, and reviews ask it.
    pub authorizer: Arc<dyn Authorizer>,
    /// What a port-forward reaches.
    pub forwarder: Arc<crate::node::forward::Forwarder>,
    /// The simulated kubelets (what they measure, for stats and metrics).
    pub kubelets: Arc<crate::node::kubelet::Kubelets>,
    /// Custom resources the add-ons bring (Calico's operator Installation), read-only.
    pub custom: Arc<custom::CustomResources>,
    /// Lists being read in chunks (`limit` and `continue`).
    pub pages: paging::Pages,
}

pub type ApiState = Arc<Shared>;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(code, self.to_status().to_string().into_bytes())
    }
}

/// A JSON response with the given status code.
pub(crate) fn json_response(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

fn json_value(code: StatusCode, v: &Value) -> Response {
    json_response(code, v.to_string().into_bytes())
}

/// The router serving the whole API.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/version", get(version))
        .route("/healthz", get(healthy))
        .route("/readyz", get(healthy))
        .route("/livez", get(healthy))
        .route(
            "/api",
            get(|| async { json_value(StatusCode::OK, &discovery::core_versions()) }),
        )
        .route(
            "/apis",
            get(|State(state): State<ApiState>| async move {
                json_value(StatusCode::OK, &discovery::group_list_with(&state.custom.groups()))
            }),
        )
        .route("/openapi/v3", get(openapi_index))
        .route("/openapi/v3/{*gv}", get(openapi_document))
        .fallback(dispatch)
        .layer(middleware::from_fn_with_state(state.clone(), authn::guard))
        .with_state(state)
}

async fn version(State(state): State<ApiState>) -> Response {
    json_value(StatusCode::OK, &state.version)
}

async fn healthy() -> Response {
    let mut resp = Response::new(Body::from("ok"));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

async fn openapi_index(State(state): State<ApiState>) -> Response {
    json_value(StatusCode::OK, &openapi::index(&state.openapi_hash))
}

async fn openapi_document(axum::extract::Path(gv): axum::extract::Path<String>) -> Response {
    match openapi::document_bytes(gv.trim_matches('/')) {
        Some(doc) => json_response(StatusCode::OK, doc),
        None => ApiError::UnknownPath.into_response(),
    }
}

/// Query parameters, in order, repeated keys kept.
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        Self(
            form_urlencoded::parse(q.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub(crate) fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }
}

/// A request for a resource, parsed from the path.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub rt: &'static ResourceType,
    /// The namespace in the path (None: cluster-scoped kind, or across all namespaces).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

impl Target {
    pub(crate) fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

enum Route {
    Group(String),
    ResourceList(String, String),
    Resource(Target),
}

fn parse_path(path: &str) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g] => {
            return match discovery::group(g) {
                Some(_) => Ok(Route::Group((*g).to_string())),
                None => Err(ApiError::UnknownPath),
            };
        }
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::UnknownPath),
    };
    if rest.is_empty() {
        return Ok(Route::ResourceList(group.into(), version.into()));
    }
    let lookup = |plural: &str| resources::lookup(group, version, plural).ok_or(ApiError::UnknownPath);
    // namespaces/{ns}/{resource}/... for a namespaced resource.
    if let ["namespaces", ns, plural, tail @ ..] = rest
        && let Some(rt) = resources::lookup(group, version, plural).filter(|r| r.namespaced)
    {
        return target(rt, Some(ns), tail);
    }
    let (plural, tail) = rest.split_first().ok_or(ApiError::UnknownPath)?;
    let rt = lookup(plural)?;
    target(rt, None, tail)
}

fn target(rt: &'static ResourceType, ns: Option<&str>, tail: &[&str]) -> Result<Route, ApiError> {
    if ns.is_some_and(str::is_empty) {
        return Err(ApiError::UnknownPath);
    }
    let (name, sub) = match tail {
        [] => (None, None),
        [name] => (Some(*name), None),
        [name, sub, ..] => {
            if !rt.has_subresource(sub) {
                return Err(ApiError::UnknownPath);
            }
            (Some(*name), Some(*sub))
        }
    };
    if name.is_some_and(str::is_empty) {
        return Err(ApiError::UnknownPath);
    }
    // A namespaced kind addressed by name needs its namespace.
    if rt.namespaced && ns.is_none() && name.is_some() {
        return Err(ApiError::UnknownPath);
    }
    Ok(Route::Resource(Target {
        rt,
        namespace: ns.map(str::to_string),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
    }))
}

/// What the client asked to get back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Table(table::IncludeObject),
}

fn negotiate(headers: &HeaderMap, q: &Query) -> Result<Format, ApiError> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.is_empty() {
        return Ok(Format::Json);
    }
    let mut json_ok = false;
    for item in accept.split(',') {
        let mut parts = item.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let params: Vec<&str> = parts.collect();
        let is_table = params.iter().any(|p| p.replace(' ', "") == "as=Table")
            && params.iter().any(|p| p.replace(' ', "") == "g=meta.k8s.io");
        if is_table && (media == "application/json" || media == "*/*") {
            return Ok(Format::Table(table::IncludeObject::parse(q.get("includeObject"))));
        }
        let has_as = params.iter().any(|p| p.trim_start().starts_with("as="));
        if !has_as && matches!(media, "application/json" | "*/*" | "application/*") {
            json_ok = true;
        }
    }
    if json_ok {
        Ok(Format::Json)
    } else {
        Err(ApiError::NotAcceptable(format!(
            "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io (asked for {accept})"
        )))
    }
}

/// Reads a request body up to [`MAX_BODY`].
async fn read_body(body: Body, headers: &HeaderMap) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY) {
        return Err(ApiError::TooLarge { limit: MAX_BODY });
    }
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::TooLarge { limit: MAX_BODY })
}

pub(crate) fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Decodes a JSON or YAML body into one object.
pub(crate) fn decode_object(ct: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    let value: Value = match ct {
        "" | "application/json" | "application/apply-patch+yaml" if looks_like_json(bytes) => {
            crate::vocab::json::decode(bytes)
                .map_err(|e| ApiError::BadRequest(format!("the request body is not valid JSON: {e}")))?
        }
        "application/yaml" | "application/apply-patch+yaml" => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| ApiError::BadRequest("the request body is not valid UTF-8".into()))?;
            serde_saphyr::from_str(text).map_err(|e| {
                ApiError::BadRequest(format!(
                    "the request body is not valid YAML: {}",
                    first_line(&e.to_string())
                ))
            })?
        }
        "" | "application/json" => {
            return Err(ApiError::BadRequest(
                "the request body is not valid JSON: it is empty or not an object".into(),
            ));
        }
        "application/vnd.kubernetes.protobuf" => protobuf::decode(bytes).map_err(|e| match e {
            protobuf::ProtobufError::Malformed(_) => ApiError::BadRequest(e.to_string()),
            protobuf::ProtobufError::UnsupportedKind(_) => ApiError::UnsupportedMediaType(e.to_string()),
        })?,
        other => {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml"
            )));
        }
    };
    if !value.is_object() {
        return Err(ApiError::BadRequest("the request body must be a JSON object".into()));
    }
    Ok(value)
}

fn looks_like_json(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

async fn dispatch(State(state): State<ApiState>, req: Request) -> Response {
    match route(state, req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

async fn route(state: ApiState, req: Request) -> Result<Response, ApiError> {
    let path = req.uri().path().to_string();
    let q = Query::parse(req.uri().query());
    let method = req.method().clone();
    if let Some(answer) = custom::serve(&state.custom, &method, &path, q.flag("watch")) {
        return answer;
    }
    let metrics_prefix = format!("/apis/{}/{}/", metrics::GROUP, metrics::VERSION);
    if let Some(rest) = path.strip_prefix(&metrics_prefix) {
        if method != Method::GET {
            return Err(ApiError::MethodNotAllowed {
                verb: method.to_string(),
                kind: "NodeMetrics".into(),
            });
        }
        let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        return metrics::serve(&state, &segs, &q);
    }
    let route = parse_path(&path)?;
    if matches!(route, Route::Group(_) | Route::ResourceList(..)) && method != Method::GET {
        return Err(ApiError::MethodNotAllowed {
            verb: method.to_string(),
            kind: "APIResourceList".into(),
        });
    }
    let target = match route {
        Route::Group(g) => {
            return discovery::group(&g)
                .map(|d| json_value(StatusCode::OK, &d))
                .ok_or(ApiError::UnknownPath);
        }
        Route::ResourceList(g, v) => {
            return discovery::resource_list(&g, &v)
                .map(|d| json_value(StatusCode::OK, &d))
                .ok_or(ApiError::UnknownPath);
        }
        Route::Resource(t) => t,
    };
    let (parts, body) = req.into_parts();
    let sub = target.sub.as_deref();
    let not_allowed = |verb: &str| ApiError::MethodNotAllowed {
        verb: verb.into(),
        kind: target.rt.kind.into(),
    };
    let user = parts
        .extensions
        .get::<UserInfo>()
        .cloned()
        .ok_or(ApiError::Unauthorized)?;
    if target.rt.create_only() {
        if method != Method::POST || target.name.is_some() {
            return Err(not_allowed(method.as_str()));
        }
        let bytes = read_body(body, &parts.headers).await?;
        return reviews::create(&state, &target, &user, &content_type(&parts.headers), &bytes);
    }
    match (&method, target.name.is_some(), sub) {
        (&Method::POST, true, Some("token")) => {
            let bytes = read_body(body, &parts.headers).await?;
            token::create(&state, &target, &content_type(&parts.headers), &bytes)
        }
        (_, true, Some("token")) => Err(not_allowed(method.as_str())),
        (&Method::GET, true, Some("scale")) => scale::get(&state, &target),
        (&Method::PUT, true, Some("scale")) => {
            let bytes = read_body(body, &parts.headers).await?;
            scale::update(&state, &target, &content_type(&parts.headers), &bytes)
        }
        (&Method::PATCH, true, Some("scale")) => {
            let bytes = read_body(body, &parts.headers).await?;
            scale::patch(&state, &target, &q, &content_type(&parts.headers), &bytes)
        }
        (&Method::GET, _, Some("exec")) | (&Method::POST, _, Some("exec")) => {
            exec::exec(state, &target, &q, parts).await
        }
        (&Method::GET, true, Some("attach")) | (&Method::POST, true, Some("attach")) => {
            attach::attach(state, &target, &q, parts).await
        }
        (&Method::GET, true, Some("portforward")) | (&Method::POST, true, Some("portforward")) => {
            portforward::portforward(state, &target, parts).await
        }
        (&Method::GET, true, Some("log")) => logs::logs(state, &target, &q).await,
        (&Method::GET, true, Some("proxy")) if target.rt.plural == "nodes" => {
            let rest = path
                .split_once("/proxy")
                .map(|(_, r)| r.trim_start_matches('/'))
                .unwrap_or("");
            nodeproxy::serve(&state, target.name.as_deref().unwrap_or(""), rest)
        }
        (_, _, Some("proxy")) => Err(ApiError::UnknownPath),
        (&Method::GET, false, None) => {
            let format = negotiate(&parts.headers, &q)?;
            if q.flag("watch") {
                watch::watch(state, &target, &q, format).await
            } else {
                resource::list(&state, &target, &q, format)
            }
        }
        (&Method::GET, true, Some("binding" | "finalize")) => Err(not_allowed("GET")),
        (&Method::GET, true, _) => {
            let format = negotiate(&parts.headers, &q)?;
            resource::get(&state, &target, format)
        }
        (&Method::POST, false, None) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::create(&state, &target, &q, &content_type(&parts.headers), &bytes)
        }
        (&Method::POST, true, Some("binding")) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::bind(&state, &target, &content_type(&parts.headers), &bytes)
        }
        (&Method::PUT, true, None | Some("status" | "finalize")) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::update(&state, &target, &q, &content_type(&parts.headers), &bytes)
        }
        (&Method::PATCH, true, None | Some("status")) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::patch(&state, &target, &user, &q, &content_type(&parts.headers), &bytes)
        }
        (&Method::DELETE, true, None) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::delete(&state, &target, &q, &bytes)
        }
        (&Method::DELETE, false, None) => {
            let bytes = read_body(body, &parts.headers).await?;
            resource::delete_collection(&state, &target, &q, &bytes)
        }
        (m, _, _) => Err(not_allowed(m.as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("/api/v1/pods", "pods", None, None, None)]
    #[case("/api/v1/namespaces/a/pods", "pods", Some("a"), None, None)]
    #[case("/api/v1/namespaces/a/pods/p/log", "pods", Some("a"), Some("p"), Some("log"))]
    #[case("/api/v1/namespaces/a", "namespaces", None, Some("a"), None)]
    #[case("/api/v1/namespaces/a/status", "namespaces", None, Some("a"), Some("status"))]
    #[case("/api/v1/nodes/n1/status", "nodes", None, Some("n1"), Some("status"))]
    #[case(
        "/apis/apps/v1/namespaces/x/deployments/d",
        "deployments",
        Some("x"),
        Some("d"),
        None
    )]
    #[case(
        "/api/v1/namespaces/x/serviceaccounts/sa/token",
        "serviceaccounts",
        Some("x"),
        Some("sa"),
        Some("token")
    )]
    #[case(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/x/rolebindings/b",
        "rolebindings",
        Some("x"),
        Some("b"),
        None
    )]
    #[case(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
        "clusterroles",
        None,
        Some("view"),
        None
    )]
    fn paths(
        #[case] path: &str,
        #[case] plural: &str,
        #[case] ns: Option<&str>,
        #[case] name: Option<&str>,
        #[case] sub: Option<&str>,
    ) {
        match parse_path(path) {
            Ok(Route::Resource(t)) => {
                assert_eq!(t.rt.plural, plural);
                assert_eq!(t.namespace.as_deref(), ns);
                assert_eq!(t.name.as_deref(), name);
                assert_eq!(t.sub.as_deref(), sub);
            }
            _ => panic!("{path} did not parse as a resource"),
        }
    }

    #[rstest]
    #[case("/api/v2/pods")]
    #[case("/api/v1/widgets")]
    #[case("/api/v1/pods/p")]
    #[case("/api/v1/namespaces/a/pods/p/teleport")]
    #[case("/apis/policy")]
    #[case("/api/v1/namespaces/a/configmaps/c/token")]
    #[case("/apis/apps/v1/namespaces//deployments")]
    #[case("/nonsense")]
    fn unknown_paths(#[case] path: &str) {
        assert!(matches!(parse_path(path), Err(ApiError::UnknownPath)), "{path}");
    }

    #[rstest]
    #[case(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        true
    )]
    #[case("application/vnd.kubernetes.protobuf,application/json", false)]
    #[case("*/*", false)]
    #[case("", false)]
    fn accept_headers(#[case] accept: &str, #[case] table: bool) {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(accept).expect("header"));
        let f = negotiate(&headers, &Query::default()).expect("acceptable");
        assert_eq!(matches!(f, Format::Table(_)), table);
    }

    #[test]
    fn protobuf_only_is_not_acceptable() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/vnd.kubernetes.protobuf"),
        );
        assert_eq!(negotiate(&headers, &Query::default()).expect_err("406").code(), 406);
    }
}
