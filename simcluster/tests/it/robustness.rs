//! Bad input never panics: malformed JSON or YAML bodies, unknown kinds and paths, invalid
//! names, wrong content types, oversized bodies, a missing or wrong token all get the right
//! status code and a `Status` body; a seeded fuzz batch of random and truncated bodies is sent
//! at every handler and the server must still answer afterwards (the batch: [`fuzz`]).

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Mutex, Once};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, RequestBuilder};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::internals::MAX_BODY;
use simcluster::{Cluster, ClusterConfig, Topology};

mod fuzz;

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// A started cluster and a raw HTTPS client that trusts its CA.
struct Api {
    cluster: Cluster,
    client: reqwest::Client,
}

impl Api {
    /// The default cluster on a clock twenty times the wall clock's pace: nothing here times
    /// what the cluster does, and its start (handed over once the cluster DNS runs) takes a
    /// twentieth of the time, for some 200 tests that each start one.
    async fn start() -> Self {
        let mut topology = Topology::default_cluster().instant().on_wall_clock();
        topology.timing.scale = 0.05;
        Self::with(common::start_with(ClusterConfig::new(topology)).await)
    }

    fn with(cluster: Cluster) -> Self {
        let client = common::http_client(&cluster);
        Self { cluster, client }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.cluster.url())
    }

    /// A request without credentials.
    fn anonymous(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// A request carrying the cluster's bearer token.
    fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.anonymous(method, path).bearer_auth(self.cluster.token())
    }

    async fn get(&self, path: &str) -> Reply {
        reply(self.req(Method::GET, path)).await
    }

    /// Sends `body` as `content_type`.
    async fn send(&self, method: Method, path: &str, content_type: &str, body: impl Into<reqwest::Body>) -> Reply {
        reply(self.req(method, path).header(CONTENT_TYPE, content_type).body(body)).await
    }

    async fn send_json(&self, method: Method, path: &str, body: &Value) -> Reply {
        self.send(method, path, "application/json", body.to_string()).await
    }

    /// Creates an object and returns it; the create must answer 201.
    async fn create(&self, collection: &str, body: Value) -> Value {
        let r = self.send_json(Method::POST, collection, &body).await;
        assert_eq!(r.code, 201, "POST {collection} {body}: {}", r.text());
        r.json()
    }
}

/// A fully read response.
#[derive(Debug)]
struct Reply {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("the body is not JSON ({e}): {}", self.text()))
    }

    /// Asserts a failure `Status` with this code and reason (and the right shape), and returns it.
    fn status(&self, code: u16, reason: &str) -> Value {
        assert_eq!(self.code, code, "expected {code} {reason}, got: {}", self.text());
        assert!(
            self.content_type.starts_with("application/json"),
            "a Status is JSON, got content type {:?}",
            self.content_type
        );
        if let Some(problem) = status_problem(code, &self.body) {
            panic!("not a proper Status ({problem}): {}", self.text());
        }
        let status = self.json();
        assert_eq!(status["reason"], reason, "{status}");
        status
    }
}

async fn reply(rb: RequestBuilder) -> Reply {
    let resp = rb.send().await.expect("the server answers");
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.bytes().await.expect("the whole body arrives").to_vec();
    Reply {
        code,
        content_type,
        body,
    }
}

/// What is wrong with a body that should be a failure `Status` answered with `code`, if anything.
fn status_problem(code: u16, body: &[u8]) -> Option<String> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(format!("not JSON: {e}")),
    };
    let mut problems = Vec::new();
    if v["kind"] != "Status" {
        problems.push(format!("kind is {}", v["kind"]));
    }
    if v["apiVersion"] != "v1" {
        problems.push(format!("apiVersion is {}", v["apiVersion"]));
    }
    if v["status"] != "Failure" {
        problems.push(format!("status is {}", v["status"]));
    }
    if v["code"] != code {
        problems.push(format!("code is {} but the HTTP status is {code}", v["code"]));
    }
    if v["reason"].as_str().is_none_or(str::is_empty) {
        problems.push(format!("reason is {}", v["reason"]));
    }
    if v["message"].as_str().is_none_or(str::is_empty) {
        problems.push(format!("message is {}", v["message"]));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "fz"}},
        // Left to a scheduler that does not exist, so the fixture binds it itself.
        "spec": {"schedulerName": "fixture-scheduler",
                 "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]},
    })
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}})
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "fz"}},
            "template": {
                "metadata": {"labels": {"app": "fz"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    })
}

/// What a valid body for a path looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sample {
    Pod,
    PodStatus,
    Binding,
    ConfigMap,
    Secret,
    Service,
    Event,
    Namespace,
    NamespaceFinalize,
    Node,
    Deployment,
    Lease,
    EndpointSlice,
    RuntimeClass,
    Nothing,
}

const FUZZ_NS: &str = "fuzz";

fn sample_object(sample: Sample, name: &str, node: &str) -> Value {
    let named = |kind: &str, api_version: &str, rest: Value| {
        let mut v = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
        overlay(&mut v, &rest);
        v
    };
    match sample {
        Sample::Pod => pod(name),
        Sample::PodStatus => {
            let mut p = pod(name);
            p["status"] = json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                "restartCount": 0, "image": "busybox", "imageID": "", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]});
            p
        }
        Sample::Binding => named(
            "Binding",
            "v1",
            json!({"target": {"apiVersion": "v1", "kind": "Node", "name": node}}),
        ),
        Sample::ConfigMap => configmap(name),
        Sample::Secret => named("Secret", "v1", json!({"type": "Opaque", "stringData": {"k": "v"}})),
        Sample::Service => service(name),
        Sample::Event => named(
            "Event",
            "v1",
            json!({"involvedObject": {"kind": "Pod", "name": "p", "namespace": FUZZ_NS}, "reason": "Fuzz",
                "message": "m", "type": "Normal"}),
        ),
        Sample::Namespace => named("Namespace", "v1", json!({})),
        Sample::NamespaceFinalize => named("Namespace", "v1", json!({"spec": {"finalizers": []}})),
        Sample::Node => named("Node", "v1", json!({"spec": {"unschedulable": false}, "status": {}})),
        Sample::Deployment => deployment(name),
        Sample::Lease => named(
            "Lease",
            "coordination.k8s.io/v1",
            json!({"spec": {"holderIdentity": "fz", "leaseDurationSeconds": 10}}),
        ),
        Sample::EndpointSlice => named(
            "EndpointSlice",
            "discovery.k8s.io/v1",
            json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
        ),
        Sample::RuntimeClass => named("RuntimeClass", "node.k8s.io/v1", json!({"handler": "runc"})),
        Sample::Nothing => json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}),
    }
}

/// Merges `patch` into `target` (objects recursively, everything else replaced).
fn overlay(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(existing) => overlay(existing, v),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

const CM_COLLECTION: &str = "/api/v1/namespaces/default/configmaps";
const CM_ITEM: &str = "/api/v1/namespaces/default/configmaps/cm";

/// A cluster holding the configmap `default/cm`.
async fn with_configmap() -> Api {
    let api = Api::start().await;
    api.create(CM_COLLECTION, configmap("cm")).await;
    api
}

// ---------------------------------------------------------------------------
// Health and authentication
// ---------------------------------------------------------------------------

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_endpoints_answer_ok(#[values("/healthz", "/readyz", "/livez")] path: &str) {
    let api = Api::start().await;
    let r = api.get(path).await;
    assert_eq!(r.code, 200, "{path}: {}", r.text());
    assert_eq!(r.text(), "ok");
    assert!(r.content_type.starts_with("text/plain"), "{}", r.content_type);
}

#[derive(Debug, Clone, Copy)]
enum Credential {
    Missing,
    WrongToken,
    /// A wrong token as long as the right one.
    SameLengthWrongToken,
    EmptyBearer,
    /// The right token inside a Basic header.
    Basic,
    /// The right token under another scheme.
    OtherScheme,
    /// The right token with something after it.
    TokenWithSuffix,
}

impl Credential {
    fn apply(self, rb: RequestBuilder, token: &str) -> RequestBuilder {
        match self {
            Self::Missing => rb,
            Self::WrongToken => rb.header(AUTHORIZATION, "Bearer not-the-token"),
            Self::SameLengthWrongToken => {
                let wrong: String = token.chars().map(|c| if c == 'a' { 'b' } else { 'a' }).collect();
                rb.header(AUTHORIZATION, format!("Bearer {wrong}"))
            }
            Self::EmptyBearer => rb.header(AUTHORIZATION, "Bearer "),
            Self::Basic => {
                let user_pass = base64::engine::general_purpose::STANDARD.encode(format!("admin:{token}"));
                rb.header(AUTHORIZATION, format!("Basic {user_pass}"))
            }
            Self::OtherScheme => rb.header(AUTHORIZATION, format!("Token {token}")),
            Self::TokenWithSuffix => rb.header(AUTHORIZATION, format!("Bearer {token}x")),
        }
    }
}

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_get_401(
    #[values(
        Credential::Missing,
        Credential::WrongToken,
        Credential::SameLengthWrongToken,
        Credential::EmptyBearer,
        Credential::Basic,
        Credential::OtherScheme,
        Credential::TokenWithSuffix
    )]
    credential: Credential,
    #[values(
        "/version",
        "/api/v1/pods",
        "/apis",
        "/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true",
        "/healthz",
        "/nonsense"
    )]
    path: &str,
) {
    let api = Api::start().await;
    let rb = credential.apply(api.anonymous(Method::GET, path), api.cluster.token());
    let status = reply(rb).await.status(401, "Unauthorized");
    assert_eq!(status["message"], "Unauthorized");
    assert_eq!(status["code"], 401);
}

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_writes_change_nothing(
    #[values(Credential::Missing, Credential::WrongToken, Credential::Basic)] credential: Credential,
) {
    let api = with_configmap().await;
    let token = api.cluster.token().to_string();
    let post = api
        .anonymous(Method::POST, CM_COLLECTION)
        .header(CONTENT_TYPE, "application/json")
        .body(configmap("sneaky").to_string());
    reply(credential.apply(post, &token)).await.status(401, "Unauthorized");
    let delete = api.anonymous(Method::DELETE, CM_ITEM);
    reply(credential.apply(delete, &token))
        .await
        .status(401, "Unauthorized");
    api.get(&format!("{CM_COLLECTION}/sneaky"))
        .await
        .status(404, "NotFound");
    assert_eq!(api.get(CM_ITEM).await.code, 200, "the configmap survived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_verify_the_serving_certificate() {
    let api = Api::start().await;
    let other = common::start().await;
    let url = api.url("/version");
    let token = api.cluster.token();

    // Trusting another cluster's CA.
    let other_ca = reqwest::Certificate::from_pem(other.ca_pem().as_bytes()).expect("other CA PEM");
    let wrong_ca = reqwest::Client::builder()
        .tls_certs_only([other_ca])
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client trusting another CA");
    let err = wrong_ca
        .get(&url)
        .bearer_auth(token)
        .send()
        .await
        .expect_err("a client that does not trust the cluster CA must not connect");
    let chain = error_chain(&err);
    assert!(err.is_connect(), "expected a connect error, got {chain}");
    assert!(chain.to_lowercase().contains("certificate"), "{chain}");

    // The platform's roots only.
    let platform = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client with the platform roots");
    let err = platform
        .get(&url)
        .bearer_auth(token)
        .send()
        .await
        .expect_err("the cluster CA is not a public root");
    assert!(err.is_connect(), "expected a connect error, got {}", error_chain(&err));

    // The client trusting the right CA gets through.
    assert_eq!(api.get("/version").await.code, 200);
}

// ---------------------------------------------------------------------------
// Paths, kinds and content negotiation
// ---------------------------------------------------------------------------

#[rstest]
#[case(Method::GET, "/api/v2/pods")]
#[case(Method::GET, "/apis/batch/v1/podtemplates")]
#[case(Method::POST, "/apis/storage.k8s.io/v1/storageclasses")]
#[case(Method::GET, "/api/v1/widgets")]
#[case(Method::POST, "/api/v1/namespaces/default/widgets")]
#[case(Method::DELETE, "/api/v1/widgets/w")]
#[case(Method::GET, "/api/v1/namespaces/default/pods/p/teleport")]
#[case(Method::GET, "/api/v1/pods/p")]
#[case(Method::GET, "/apis/apps/v1/namespaces//deployments")]
#[case(Method::GET, "/apis/policy")]
#[case(Method::GET, "/apis/apps/v2")]
#[case(Method::GET, "/openapi/v3/apis/policy/v1")]
#[case(Method::GET, "/nonsense")]
#[case(Method::PUT, "/nonsense/deeper/still")]
#[case(Method::GET, "/api/v1/namespaces/default/pods/p/proxy/x")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_kinds_are_404(#[case] method: Method, #[case] path: &str) {
    let api = Api::start().await;
    let r = reply(
        api.req(method.clone(), path)
            .header(CONTENT_TYPE, "application/json")
            .body("{}"),
    )
    .await;
    let status = r.status(404, "NotFound");
    assert_eq!(
        status["message"], "the server could not find the requested resource",
        "{method} {path}"
    );
}

#[rstest]
#[case("/apis", "APIGroupList")]
#[case("/api", "APIVersions")]
#[case("/api/v1", "APIResourceList")]
#[case("/apis/apps", "APIGroup")]
#[case("/apis/apps/v1", "APIResourceList")]
#[case("/apis/node.k8s.io/v1", "APIResourceList")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_answers_200(#[case] path: &str, #[case] kind: &str) {
    let api = Api::start().await;
    let r = api.get(path).await;
    assert_eq!(r.code, 200, "{path} must never 404: {}", r.text());
    assert_eq!(r.json()["kind"], kind);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_objects_are_404_with_details() {
    let api = Api::start().await;
    let status = api
        .get("/api/v1/namespaces/default/pods/ghost")
        .await
        .status(404, "NotFound");
    assert_eq!(status["message"], r#"pods "ghost" not found"#);
    assert_eq!(status["details"]["name"], "ghost");
    assert_eq!(status["details"]["kind"], "pods");
    let status = api
        .get("/apis/apps/v1/namespaces/default/deployments/ghost")
        .await
        .status(404, "NotFound");
    assert_eq!(status["message"], r#"deployments.apps "ghost" not found"#);
    assert_eq!(status["details"]["group"], "apps");
}

#[rstest]
#[case("text/plain")]
#[case("application/xml")]
#[case("application/x-www-form-urlencoded")]
#[case("application/json-patch+json")]
#[case("application/merge-patch+json")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_in_unknown_formats_are_415(#[case] content_type: &str) {
    let api = with_configmap().await;
    let body = configmap("other").to_string();
    let status = api
        .send(Method::POST, CM_COLLECTION, content_type, body.clone())
        .await
        .status(415, "UnsupportedMediaType");
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.contains("unknown format"), "{message}");
    assert!(message.contains(content_type), "{message}");
    let mut put = configmap("cm");
    put["data"]["k"] = json!("changed");
    api.send(Method::PUT, CM_ITEM, content_type, put.to_string())
        .await
        .status(415, "UnsupportedMediaType");
    api.get(&format!("{CM_COLLECTION}/other")).await.status(404, "NotFound");
    assert_eq!(
        api.get(CM_ITEM).await.json()["data"]["k"],
        "v",
        "the PUT was not applied"
    );
}

/// Protobuf bodies are decoded for every served kind: anything that is not a Kubernetes
/// protobuf envelope is a bad request, a served kind is validated like its JSON, and a kind
/// the server does not serve is unsupported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bodies_are_decoded_or_refused() {
    let api = with_configmap().await;
    let protobuf = "application/vnd.kubernetes.protobuf";
    let status = api
        .send(Method::POST, CM_COLLECTION, protobuf, configmap("other").to_string())
        .await
        .status(400, "BadRequest");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("missing the k8s protobuf magic"),
        "{status}"
    );
    api.get(&format!("{CM_COLLECTION}/other")).await.status(404, "NotFound");
    // k8s\0 + Unknown{typeMeta{<apiVersion>, <kind>}, raw{metadata{name: d}}}
    let envelope = |api_version: &str, kind: &str| {
        let mut type_meta = vec![0x0a, api_version.len() as u8];
        type_meta.extend_from_slice(api_version.as_bytes());
        type_meta.extend_from_slice(&[0x12, kind.len() as u8]);
        type_meta.extend_from_slice(kind.as_bytes());
        let mut body = b"k8s\0".to_vec();
        body.extend_from_slice(&[0x0a, type_meta.len() as u8]);
        body.extend_from_slice(&type_meta);
        body.extend_from_slice(&[0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, b'd']);
        body
    };
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let status = api
        .send(Method::POST, deployments, protobuf, envelope("apps/v1", "Deployment"))
        .await
        .status(422, "Invalid");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("spec.selector: Required value"),
        "{status}"
    );
    let status = api
        .send(
            Method::POST,
            deployments,
            protobuf,
            envelope("example.com/v1", "Widget"),
        )
        .await
        .status(415, "UnsupportedMediaType");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("example.com/v1/Widget"),
        "{status}"
    );
    let mut truncated = envelope("apps/v1", "Deployment");
    truncated.truncate(truncated.len() - 2);
    let status = api
        .send(Method::POST, deployments, protobuf, truncated)
        .await
        .status(400, "BadRequest");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("the protobuf body is malformed"),
        "{status}"
    );
}

#[rstest]
#[case(Some("application/json"))]
#[case(Some("text/plain"))]
#[case(Some("application/yaml"))]
#[case(Some("application/xml"))]
#[case(Some("application/apply-patch+cbor"))]
#[case(None)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_of_unknown_types_are_415(#[case] content_type: Option<&str>) {
    let api = with_configmap().await;
    let mut rb = api.req(Method::PATCH, CM_ITEM).body(r#"{"data":{"k":"patched"}}"#);
    if let Some(ct) = content_type {
        rb = rb.header(CONTENT_TYPE, ct);
    }
    let status = reply(rb).await.status(415, "UnsupportedMediaType");
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.contains("application/merge-patch+json"), "{message}");
    assert_eq!(api.get(CM_ITEM).await.json()["data"]["k"], "v");
}

#[rstest]
#[case("application/json; charset=utf-8")]
#[case("APPLICATION/JSON")]
#[case("application/yaml")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_yaml_with_parameters_are_accepted(#[case] content_type: &str) {
    let api = Api::start().await;
    let body = if content_type == "application/yaml" {
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\ndata:\n  k: v\n".to_string()
    } else {
        configmap("ok").to_string()
    };
    let r = api.send(Method::POST, CM_COLLECTION, content_type, body).await;
    assert_eq!(r.code, 201, "{}", r.text());
}

#[rstest]
#[case(CM_COLLECTION, "application/vnd.kubernetes.protobuf")]
#[case(CM_ITEM, "application/vnd.kubernetes.protobuf")]
#[case(CM_COLLECTION, "text/html")]
#[case(CM_COLLECTION, "application/json;as=Table;v=v1;g=not.k8s.io")]
#[case(
    "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
    "application/vnd.kubernetes.protobuf"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacceptable_accept_headers_are_406(#[case] path: &str, #[case] accept: &str) {
    let api = with_configmap().await;
    let r = reply(api.req(Method::GET, path).header(ACCEPT, accept)).await;
    let status = r.status(406, "NotAcceptable");
    assert!(
        status["message"].as_str().unwrap_or("").contains("application/json"),
        "{status}"
    );
    // With JSON as a fallback the same request is fine.
    let ok = reply(
        api.req(Method::GET, CM_COLLECTION)
            .header(ACCEPT, format!("{accept}, application/json")),
    )
    .await;
    assert_eq!(ok.code, 200, "{}", ok.text());
}

// ---------------------------------------------------------------------------
// Malformed and invalid bodies
// ---------------------------------------------------------------------------

const BILLION_LAUGHS: &str = r#"a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
apiVersion: v1
kind: ConfigMap
metadata:
  name: lol
"#;

const APPLY: &str = "/api/v1/namespaces/default/configmaps/cm?fieldManager=t";

#[rstest]
#[case::truncated_json(Method::POST, CM_COLLECTION, "application/json", br#"{"metadata":{"name":"x""#, 400)]
#[case::json_array(Method::POST, CM_COLLECTION, "application/json", b"[1,2,3]", 400)]
#[case::json_number(Method::POST, CM_COLLECTION, "application/json", b"42", 400)]
#[case::json_string(Method::POST, CM_COLLECTION, "application/json", br#""configmap""#, 400)]
#[case::json_null(Method::POST, CM_COLLECTION, "application/json", b"null", 400)]
#[case::empty(Method::POST, CM_COLLECTION, "application/json", b"", 400)]
#[case::invalid_utf8_json(
    Method::POST,
    CM_COLLECTION,
    "application/json",
    b"{\"metadata\":{\"name\":\"\xff\xfe\"}}",
    400
)]
#[case::invalid_utf8_yaml(
    Method::POST,
    CM_COLLECTION,
    "application/yaml",
    b"metadata:\n  name: \xff\xfe\n",
    400
)]
#[case::lone_surrogate(
    Method::POST,
    CM_COLLECTION,
    "application/json",
    br#"{"metadata":{"name":"\ud800"}}"#,
    400
)]
#[case::number_overflow(
    Method::POST,
    CM_COLLECTION,
    "application/json",
    br#"{"metadata":{"name":"x"},"n":1e999}"#,
    400
)]
#[case::trailing_garbage(
    Method::POST,
    CM_COLLECTION,
    "application/json",
    br#"{"metadata":{"name":"x"}} trailing"#,
    400
)]
#[case::metadata_not_object(Method::POST, CM_COLLECTION, "application/json", br#"{"metadata":"x"}"#, 400)]
#[case::yaml_tab(Method::POST, CM_COLLECTION, "application/yaml", b"metadata:\n\tname: x\n", 400)]
#[case::yaml_unclosed(Method::POST, CM_COLLECTION, "application/yaml", b"metadata: {name: [x\n", 400)]
#[case::yaml_scalar(Method::POST, CM_COLLECTION, "application/yaml", b"just a string\n", 400)]
#[case::yaml_list(Method::POST, CM_COLLECTION, "application/yaml", b"- a\n- b\n", 400)]
#[case::yaml_undefined_alias(Method::POST, CM_COLLECTION, "application/yaml", b"metadata: *nowhere\n", 400)]
#[case::billion_laughs(Method::POST, CM_COLLECTION, "application/yaml", BILLION_LAUGHS.as_bytes(), 400)]
#[case::billion_laughs_apply(Method::PATCH, APPLY, "application/apply-patch+yaml", BILLION_LAUGHS.as_bytes(), 400)]
#[case::put_truncated(Method::PUT, CM_ITEM, "application/json", br#"{"metadata":{"na"#, 400)]
#[case::put_array(Method::PUT, CM_ITEM, "application/json", b"[]", 400)]
#[case::put_yaml_garbage(Method::PUT, CM_ITEM, "application/yaml", b"{{{{", 400)]
#[case::merge_truncated(Method::PATCH, CM_ITEM, "application/merge-patch+json", br#"{"data":"#, 400)]
#[case::merge_array(Method::PATCH, CM_ITEM, "application/merge-patch+json", b"[1]", 400)]
#[case::merge_invalid_utf8(Method::PATCH, CM_ITEM, "application/merge-patch+json", b"\xff", 400)]
#[case::strategic_truncated(Method::PATCH, CM_ITEM, "application/strategic-merge-patch+json", b"{", 400)]
#[case::strategic_array(Method::PATCH, CM_ITEM, "application/strategic-merge-patch+json", b"[1]", 400)]
#[case::json_patch_object(Method::PATCH, CM_ITEM, "application/json-patch+json", br#"{"op":"add"}"#, 400)]
#[case::json_patch_bad_op(
    Method::PATCH,
    CM_ITEM,
    "application/json-patch+json",
    br#"[{"op":"bogus","path":"/a"}]"#,
    400
)]
#[case::json_patch_truncated(Method::PATCH, CM_ITEM, "application/json-patch+json", br#"[{"op":"add","#, 400)]
#[case::apply_truncated(Method::PATCH, APPLY, "application/apply-patch+yaml", br#"{"metadata":"#, 400)]
#[case::apply_yaml_garbage(
    Method::PATCH,
    APPLY,
    "application/apply-patch+yaml",
    b"metadata:\n\tname: cm\n",
    400
)]
#[case::delete_options_garbage(Method::DELETE, CM_ITEM, "application/json", b"{not json", 400)]
#[case::invalid_config_key(
    Method::POST,
    CM_COLLECTION,
    "application/json",
    br#"{"metadata":{"name":"x"},"data":{"a b":"c"}}"#,
    422
)]
#[case::json_patch_missing_path(
    Method::PATCH,
    CM_ITEM,
    "application/json-patch+json",
    br#"[{"op":"replace","path":"/nope/x","value":1}]"#,
    422
)]
#[case::json_patch_failed_test(
    Method::PATCH,
    CM_ITEM,
    "application/json-patch+json",
    br#"[{"op":"test","path":"/data/k","value":"other"}]"#,
    422
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_are_rejected(
    #[case] method: Method,
    #[case] path: &str,
    #[case] content_type: &str,
    #[case] body: &'static [u8],
    #[case] code: u16,
) {
    let api = with_configmap().await;
    let r = api.send(method.clone(), path, content_type, body).await;
    let reason = if code == 422 { "Invalid" } else { "BadRequest" };
    r.status(code, reason);
    // Nothing was written.
    let cm = api.get(CM_ITEM).await;
    assert_eq!(
        cm.code,
        200,
        "{method} {path}: the configmap is still there: {}",
        cm.text()
    );
    assert_eq!(cm.json()["data"], json!({"k": "v"}), "{method} {path}");
    let list = api.get(CM_COLLECTION).await.json();
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(1),
        "{method} {path}: {list}"
    );
}

#[derive(Debug, Clone, Copy)]
enum BadName {
    Uppercase,
    Underscore,
    TooLong,
}

impl BadName {
    fn text(self) -> String {
        match self {
            Self::Uppercase => "Web".into(),
            Self::Underscore => "web_1".into(),
            Self::TooLong => "a".repeat(300),
        }
    }
}

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_names_are_422(
    #[values("pods", "configmaps", "namespaces", "services")] plural: &str,
    #[values(BadName::Uppercase, BadName::Underscore, BadName::TooLong)] bad: BadName,
) {
    let api = Api::start().await;
    let name = bad.text();
    let (collection, kind, body, max) = match plural {
        "pods" => ("/api/v1/namespaces/default/pods", "Pod", pod(&name), 253),
        "configmaps" => (CM_COLLECTION, "ConfigMap", configmap(&name), 253),
        "namespaces" => (
            "/api/v1/namespaces",
            "Namespace",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            63,
        ),
        _ => ("/api/v1/namespaces/default/services", "Service", service(&name), 63),
    };
    let status = api
        .send_json(Method::POST, collection, &body)
        .await
        .status(422, "Invalid");
    let cause = &status["details"]["causes"][0];
    assert_eq!(cause["field"], "metadata.name", "{status}");
    assert_eq!(cause["reason"], "FieldValueInvalid", "{status}");
    assert_eq!(status["details"]["kind"], kind);
    assert_eq!(status["details"]["name"], name.as_str());
    let message = status["message"].as_str().unwrap_or("");
    let prefix = format!(r#"{kind} "{name}" is invalid: metadata.name: Invalid value: "{name}": "#);
    assert!(message.starts_with(&prefix), "{message}");
    let cause_message = cause["message"].as_str().unwrap_or("");
    match bad {
        BadName::TooLong => assert!(
            cause_message.ends_with(&format!("must be no more than {max} characters")),
            "{cause_message}"
        ),
        _ => assert!(cause_message.contains("regex used for validation"), "{cause_message}"),
    }
    let listed = api.get(collection).await.json();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert!(!names.contains(&name.as_str()), "{names:?}");
}

#[rstest]
#[case::pod_without_containers("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"},"spec":{}}), "spec.containers")]
#[case::pod_without_spec("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"}}), "spec.containers")]
#[case::pod_empty_containers("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"},"spec":{"containers":[]}}), "spec.containers")]
#[case::container_without_image("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}), "spec.containers[0].image")]
#[case::container_without_name("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"image":"i"}]}}), "spec.containers[0].name")]
#[case::container_port("/api/v1/namespaces/default/pods", json!({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","ports":[{}]}]}}), "spec.containers[0].ports[0].containerPort")]
#[case::configmap_without_name(CM_COLLECTION, json!({"metadata":{}}), "metadata.name")]
#[case::no_metadata(CM_COLLECTION, json!({"data":{"k":"v"}}), "metadata.name")]
#[case::service_without_ports("/api/v1/namespaces/default/services", json!({"metadata":{"name":"s"},"spec":{}}), "spec.ports")]
#[case::deployment_without_selector("/apis/apps/v1/namespaces/default/deployments", json!({"metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}), "spec.selector")]
#[case::deployment_without_containers("/apis/apps/v1/namespaces/default/deployments", json!({"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}}}}}), "spec.template.spec.containers")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_required_fields_are_422(#[case] collection: &str, #[case] body: Value, #[case] field: &str) {
    let api = Api::start().await;
    let status = api
        .send_json(Method::POST, collection, &body)
        .await
        .status(422, "Invalid");
    let causes = status["details"]["causes"].as_array().cloned().unwrap_or_default();
    let cause = causes
        .iter()
        .find(|c| c["field"] == field)
        .unwrap_or_else(|| panic!("no cause for {field}: {status}"));
    assert_eq!(cause["reason"], "FieldValueRequired", "{status}");
    assert!(
        cause["message"].as_str().unwrap_or("").starts_with("Required value"),
        "{status}"
    );
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.contains(&format!("{field}: Required value")), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_without_target_is_422() {
    let api = Api::start().await;
    api.create("/api/v1/namespaces/default/pods", pod("p")).await;
    let status = api
        .send_json(
            Method::POST,
            "/api/v1/namespaces/default/pods/p/binding",
            &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}}),
        )
        .await
        .status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "target.name");
    api.send(
        Method::POST,
        "/api/v1/namespaces/default/pods/p/binding",
        "application/json",
        "[",
    )
    .await
    .status(400, "BadRequest");
}

// ---------------------------------------------------------------------------
// Body size limit
// ---------------------------------------------------------------------------

/// A configmap named `cm` whose JSON text is exactly `len` bytes long.
fn configmap_of_size(len: usize) -> Vec<u8> {
    let empty = json!({"metadata": {"name": "cm"}, "data": {"k": ""}}).to_string();
    let pad = len.checked_sub(empty.len()).expect("room for the padding");
    let body = json!({"metadata": {"name": "cm"}, "data": {"k": "x".repeat(pad)}}).to_string();
    assert_eq!(body.len(), len);
    body.into_bytes()
}

/// A body sent with Content-Length, or chunked (no length known up front).
fn sized_body(bytes: Vec<u8>, chunked: bool) -> reqwest::Body {
    if chunked {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
        reqwest::Body::wrap_stream(futures::stream::iter(chunks))
    } else {
        reqwest::Body::from(bytes)
    }
}

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_413(
    #[values(Method::POST, Method::PUT, Method::PATCH, Method::DELETE)] method: Method,
    #[values(false, true)] chunked: bool,
) {
    let api = with_configmap().await;
    let (path, content_type) = match method {
        Method::POST => (CM_COLLECTION, "application/json"),
        Method::PATCH => (CM_ITEM, "application/merge-patch+json"),
        _ => (CM_ITEM, "application/json"),
    };
    let body = sized_body(configmap_of_size(MAX_BODY + 1), chunked);
    let status = api
        .send(method.clone(), path, content_type, body)
        .await
        .status(413, "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        format!("the request body is too large: limit is {MAX_BODY} bytes"),
        "{method} chunked={chunked}"
    );
    let cm = api.get(CM_ITEM).await;
    assert_eq!(cm.code, 200, "{method}: the configmap is untouched");
    assert_eq!(cm.json()["data"]["k"], "v", "{method}");
}

#[rstest]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_exactly_the_limit_is_accepted(#[values(false, true)] chunked: bool) {
    let api = Api::start().await;
    let body = sized_body(configmap_of_size(MAX_BODY), chunked);
    let r = api.send(Method::POST, CM_COLLECTION, "application/json", body).await;
    assert_eq!(r.code, 201, "chunked={chunked}: {}", r.text().get(..300).unwrap_or(""));
}

// ---------------------------------------------------------------------------
// Identity in the body versus the URL
// ---------------------------------------------------------------------------

#[rstest]
#[case::kind(Method::POST, CM_COLLECTION, json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}), "the kind in the data (Secret) does not match the expected kind (ConfigMap)")]
#[case::api_version(Method::POST, CM_COLLECTION, json!({"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}), "the API version in the data (v2) does not match the expected API version (v1)")]
#[case::group(Method::POST, "/apis/apps/v1/namespaces/default/deployments", json!({"apiVersion":"extensions/v1beta1","kind":"Deployment","metadata":{"name":"x"}}), "does not match the expected API version (apps/v1)")]
#[case::kind_other_group(Method::POST, "/apis/coordination.k8s.io/v1/namespaces/default/leases", json!({"apiVersion":"coordination.k8s.io/v1","kind":"ConfigMap","metadata":{"name":"x"}}), "does not match the expected kind (Lease)")]
#[case::namespace(Method::POST, CM_COLLECTION, json!({"metadata":{"name":"x","namespace":"kube-system"}}), "the namespace of the provided object does not match the namespace sent on the request")]
#[case::put_namespace(Method::PUT, CM_ITEM, json!({"metadata":{"name":"cm","namespace":"kube-system"}}), "the namespace of the provided object does not match the namespace sent on the request")]
#[case::put_kind(Method::PUT, CM_ITEM, json!({"kind":"Secret","metadata":{"name":"cm"}}), "does not match the expected kind (ConfigMap)")]
#[case::put_name(Method::PUT, CM_ITEM, json!({"metadata":{"name":"other"}}), "the name of the object (other) does not match the name on the URL (cm)")]
#[case::apply_kind(Method::PATCH, APPLY, json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"cm"}}), "does not match the expected kind (ConfigMap)")]
#[case::apply_namespace(Method::PATCH, APPLY, json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"other"}}), "the namespace of the provided object does not match")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_mismatches_are_400(
    #[case] method: Method,
    #[case] path: &str,
    #[case] body: Value,
    #[case] needle: &str,
) {
    let api = with_configmap().await;
    let content_type = if method == Method::PATCH {
        "application/apply-patch+yaml"
    } else {
        "application/json"
    };
    let status = api
        .send(method.clone(), path, content_type, body.to_string())
        .await
        .status(400, "BadRequest");
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.contains(needle), "{method} {path}: {message}");
    assert_eq!(api.get(CM_ITEM).await.json()["data"], json!({"k": "v"}));
}

// ---------------------------------------------------------------------------
// Query parameters
// ---------------------------------------------------------------------------

#[rstest]
#[case::watch_rv_garbage(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=zz",
    "invalid resource version"
)]
#[case::watch_rv_negative(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=-1",
    "invalid resource version"
)]
#[case::watch_rv_overflow(
    Method::GET,
    "/api/v1/pods?watch=1&resourceVersion=18446744073709551616",
    "invalid resource version"
)]
#[case::list_label_garbage(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
    "invalid label selector"
)]
#[case::watch_label_garbage(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?watch=1&labelSelector=a%20in%20(",
    "invalid label selector"
)]
#[case::label_percent(Method::GET, "/api/v1/pods?labelSelector=%%%", "invalid label selector")]
#[case::label_unicode(
    Method::GET,
    "/api/v1/pods?labelSelector=%C3%A9%3D%E2%82%AC",
    "invalid label selector"
)]
#[case::field_unsupported(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?fieldSelector=spec.foo%3D1",
    "field label not supported: spec.foo"
)]
#[case::watch_field_unsupported(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=spec.foo%3D1",
    "field label not supported: spec.foo"
)]
#[case::field_garbage(
    Method::GET,
    "/api/v1/namespaces/default/configmaps?fieldSelector=%3D%3D%3D",
    "field selector"
)]
#[case::delete_collection_label(
    Method::DELETE,
    "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
    "invalid label selector"
)]
#[case::delete_collection_field(
    Method::DELETE,
    "/api/v1/namespaces/default/configmaps?fieldSelector=spec.foo%3D1",
    "field label not supported"
)]
#[case::grace_garbage(
    Method::DELETE,
    "/api/v1/namespaces/default/configmaps/cm?gracePeriodSeconds=soon",
    "invalid gracePeriodSeconds"
)]
#[case::dry_run(Method::DELETE, "/api/v1/namespaces/default/configmaps/cm?dryRun=All", "dryRun")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_query_parameters_are_400(#[case] method: Method, #[case] path: &str, #[case] needle: &str) {
    let api = with_configmap().await;
    let status = reply(api.req(method, path)).await.status(400, "BadRequest");
    let message = status["message"].as_str().unwrap_or("");
    assert!(message.contains(needle), "{path}: {message}");
    assert_eq!(api.get(CM_ITEM).await.code, 200, "nothing was deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supported_selectors_still_work() {
    let api = with_configmap().await;
    let r = api
        .get("/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dcm&labelSelector=!missing")
        .await;
    assert_eq!(r.code, 200, "{}", r.text());
    assert_eq!(r.json()["items"][0]["metadata"]["name"], "cm");
    let r = api.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dx").await;
    assert_eq!(r.code, 200, "{}", r.text());
}

/// Binds `namespace/name` to a node no simulated kubelet runs (so nothing else writes its
/// status) and marks its container running.
async fn make_running(api: &Api, namespace: &str, name: &str) {
    let node = "fixture-node".to_string();
    let pods = format!("/api/v1/namespaces/{namespace}/pods");
    let bound = api
        .send_json(
            Method::POST,
            &format!("{pods}/{name}/binding"),
            &sample_object(Sample::Binding, name, &node),
        )
        .await;
    assert_eq!(bound.code, 201, "binding {name}: {}", bound.text());
    let status = sample_object(Sample::PodStatus, name, &node);
    let running = api
        .send(
            Method::PATCH,
            &format!("{pods}/{name}/status"),
            "application/merge-patch+json",
            json!({"status": status["status"]}).to_string(),
        )
        .await;
    assert_eq!(running.code, 200, "marking {name} running: {}", running.text());
    let log = api.get(&format!("{pods}/{name}/log")).await;
    assert_eq!(log.code, 200, "log of the running pod: {}", log.text());
}

/// Numbers the handlers turn into times and durations, far out of range. Upstream answers
/// these (Go's time arithmetic saturates or wraps); the one thing never allowed is no answer.
#[rstest]
#[case::log_since_huge(Method::GET, "/p/log?sinceSeconds=99999999999999999", "")]
#[case::log_since_far(Method::GET, "/p/log?sinceSeconds=9000000000000000", "")]
#[case::log_since_min(Method::GET, "/p/log?sinceSeconds=-9223372036854775808", "")]
#[case::log_since_max(Method::GET, "/p/log?sinceSeconds=9223372036854775807", "")]
#[case::log_since_time_far(Method::GET, "/p/log?sinceTime=9999-12-31T23:59:59Z", "")]
#[case::log_tail_huge(
    Method::GET,
    "/p/log?tailLines=9223372036854775807&limitBytes=9223372036854775807",
    ""
)]
#[case::delete_grace_query_max(Method::DELETE, "/p?gracePeriodSeconds=9223372036854775807", "")]
#[case::delete_grace_query_huge(Method::DELETE, "/p?gracePeriodSeconds=99999999999999999", "")]
#[case::delete_grace_body_huge(Method::DELETE, "/p", r#"{"gracePeriodSeconds":99999999999999999}"#)]
#[case::delete_grace_body_min(Method::DELETE, "/p", r#"{"gracePeriodSeconds":-9223372036854775808}"#)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_numbers_in_options_are_answered(#[case] method: Method, #[case] tail: &str, #[case] body: &str) {
    let api = Api::start().await;
    api.create("/api/v1/namespaces/default/pods", pod("p")).await;
    make_running(&api, "default", "p").await;
    let path = format!("/api/v1/namespaces/default/pods{tail}");
    let result = api
        .req(method.clone(), &path)
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await;
    let resp = match result {
        Ok(resp) => resp,
        Err(e) => panic!("{method} {path} {body}: the server gave no answer: {}", error_chain(&e)),
    };
    let code = resp.status().as_u16();
    assert!(code < 500, "{method} {path} {body}: {code}");
    // The server still answers about this pod (a delete may have removed it).
    let after = api.get("/api/v1/namespaces/default/pods/p").await.code;
    assert!(matches!(after, 200 | 404), "GET after {method} {path}: {after}");
}
