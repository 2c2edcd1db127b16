//! Bad input never panics: malformed JSON or YAML bodies, unknown kinds and paths, invalid
//! names, wrong content types, oversized bodies, a missing or wrong token all get the right
//! status code and a `Status` body; a seeded fuzz batch of random and truncated bodies is sent
//! at every handler and the server must still answer afterwards.

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
use simcluster::Cluster;
use simcluster::internals::MAX_BODY;

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// A started cluster and a raw HTTPS client that trusts its CA.
struct Api {
    cluster: Cluster,
    client: reqwest::Client,
}

impl Api {
    async fn start() -> Self {
        Self::with(common::start().await)
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

// ---------------------------------------------------------------------------
// The fuzz batch
// ---------------------------------------------------------------------------

/// xorshift64: a tiny deterministic generator, so a failing batch can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX).max(1);
        usize::try_from(self.next() % n64).unwrap_or(0)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next().to_le_bytes()[3]).collect()
    }
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
const FUZZ_REQUESTS: usize = 4000;
const FUZZ_CONCURRENCY: usize = 16;

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

/// Block-style YAML for a JSON value (strings and keys as JSON, i.e. double-quoted, strings).
fn to_yaml(v: &Value) -> String {
    fn nested(v: &Value) -> bool {
        matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
    }
    fn value(v: &Value, indent: usize, out: &mut String) {
        if nested(v) {
            out.push('\n');
            block(v, indent + 2, out);
        } else {
            out.push(' ');
            out.push_str(&v.to_string());
            out.push('\n');
        }
    }
    fn block(v: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, item) in m {
                    out.push_str(&pad);
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    value(item, indent, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for item in a {
                    out.push_str(&pad);
                    out.push('-');
                    value(item, indent, out);
                }
            }
            other => {
                out.push_str(&pad);
                out.push_str(&other.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    block(v, 0, &mut out);
    out
}

/// Valid JSON of the wrong shape: wrong types, nulls, odd patch directives, extreme numbers.
const WRONG_SHAPES: &[&str] = &[
    "[]",
    "{}",
    "null",
    "42",
    "-0",
    r#""str""#,
    "true",
    "[{}]",
    r#"{"metadata":null}"#,
    r#"{"metadata":"x"}"#,
    r#"{"metadata":[]}"#,
    r#"{"metadata":{"name":42}}"#,
    r#"{"metadata":{"name":""}}"#,
    r#"{"metadata":{"name":null,"generateName":7}}"#,
    r#"{"metadata":{"generateName":"fz-"}}"#,
    r#"{"metadata":{"generateName":"Bad_"}}"#,
    r#"{"metadata":{"labels":"x"}}"#,
    r#"{"metadata":{"labels":{"a":{"b":1}}}}"#,
    r#"{"metadata":{"labels":{"a":null}}}"#,
    r#"{"metadata":{"annotations":[1]}}"#,
    r#"{"metadata":{"namespace":["x"]}}"#,
    r#"{"metadata":{"resourceVersion":"1"}}"#,
    r#"{"metadata":{"resourceVersion":42}}"#,
    r#"{"metadata":{"resourceVersion":"18446744073709551616"}}"#,
    r#"{"metadata":{"uid":"x","finalizers":"a"}}"#,
    r#"{"metadata":{"finalizers":[1,null]}}"#,
    r#"{"metadata":{"finalizers":["fz/hold"]}}"#,
    r#"{"metadata":{"deletionTimestamp":"now","deletionGracePeriodSeconds":"x"}}"#,
    r#"{"metadata":{"generation":9223372036854775807}}"#,
    r#"{"metadata":{"creationTimestamp":7,"managedFields":"x"}}"#,
    r#"{"metadata":{"ownerReferences":"x"}}"#,
    r#"{"spec":null}"#,
    r#"{"spec":"x"}"#,
    r#"{"spec":[]}"#,
    r#"{"spec":{"containers":"x"}}"#,
    r#"{"spec":{"containers":[null]}}"#,
    r#"{"spec":{"containers":[{"name":7,"image":[]}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":"80"}]}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","ports":"x"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":[],"memory":7}}}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":":::@@@"}]}}"#,
    r#"{"spec":{"initContainers":"x","ephemeralContainers":7}}"#,
    r#"{"spec":{"restartPolicy":7,"nodeName":[]}}"#,
    r#"{"spec":{"nodeName":"no-such-node"}}"#,
    r#"{"spec":{"terminationGracePeriodSeconds":9223372036854775807}}"#,
    r#"{"spec":{"terminationGracePeriodSeconds":-9223372036854775808}}"#,
    r#"{"spec":{"replicas":"3","selector":"x","template":null}}"#,
    r#"{"spec":{"replicas":1e300}}"#,
    r#"{"spec":{"replicas":-1}}"#,
    r#"{"spec":{"selector":{"matchLabels":{"a":1}}}}"#,
    r#"{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}"#,
    r#"{"spec":{"selector":{"matchExpressions":"x"}}}"#,
    r#"{"spec":{"selector":null}}"#,
    r#"{"spec":{"template":{"metadata":{"labels":"x"},"spec":{"containers":[]}}}}"#,
    r#"{"spec":{"ports":[{"port":"x"}],"type":7}}"#,
    r#"{"spec":{"ports":[{"port":70000,"nodePort":-1}],"type":"NodePort"}}"#,
    r#"{"spec":{"ports":[{"port":80},{"port":81}]}}"#,
    r#"{"spec":{"type":"ExternalName"}}"#,
    r#"{"spec":{"clusterIP":"None","ports":null}}"#,
    r#"{"spec":{"finalizers":"x"}}"#,
    r#"{"spec":{"finalizers":[1]}}"#,
    r#"{"spec":{"unschedulable":"yes","taints":"x"}}"#,
    r#"{"spec":{"holderIdentity":7,"leaseDurationSeconds":"x"}}"#,
    r#"{"status":"x"}"#,
    r#"{"status":null}"#,
    r#"{"status":{"phase":7,"containerStatuses":"x"}}"#,
    r#"{"status":{"phase":"Succeeded"}}"#,
    r#"{"status":{"containerStatuses":[{"name":"c","state":{"running":7}}]}}"#,
    r#"{"status":{"containerStatuses":[{"name":"c","lastState":{"terminated":{}},"state":{"waiting":{"reason":7}}}]}}"#,
    r#"{"status":{"conditions":[1,2]}}"#,
    r#"{"status":{"conditions":"x","replicas":"x"}}"#,
    r#"{"data":"x"}"#,
    r#"{"data":{"k":7}}"#,
    r#"{"data":{"":"x"}}"#,
    r#"{"binaryData":{"k":"not base64"}}"#,
    r#"{"stringData":{"k":1}}"#,
    r#"{"stringData":"x","data":null}"#,
    r#"{"type":7}"#,
    r#"{"target":{"name":7}}"#,
    r#"{"target":"node"}"#,
    r#"{"target":{"name":""}}"#,
    r#"{"target":{"name":"no-such-node"}}"#,
    r#"{"kind":7,"apiVersion":[]}"#,
    r#"{"kind":"","apiVersion":""}"#,
    r#"{"kind":"Status"}"#,
    r#"{"apiVersion":"v1","kind":"List","items":[{}]}"#,
    r#"{"gracePeriodSeconds":"x"}"#,
    r#"{"gracePeriodSeconds":-1}"#,
    r#"{"gracePeriodSeconds":1e300}"#,
    r#"{"gracePeriodSeconds":9223372036854775807}"#,
    r#"{"gracePeriodSeconds":99999999999999999}"#,
    r#"{"preconditions":{"uid":7}}"#,
    r#"{"preconditions":{"uid":"x","resourceVersion":"1"}}"#,
    r#"{"preconditions":"x"}"#,
    r#"{"dryRun":"All"}"#,
    r#"{"dryRun":["All"]}"#,
    r#"{"propagationPolicy":"Bogus"}"#,
    r#"{"subsets":[{"addresses":[{"ip":7}]}]}"#,
    r#"{"endpoints":"x","addressType":7}"#,
    r#"{"ports":[{"port":"x"}]}"#,
    r#"{"handler":7}"#,
    r#"{"involvedObject":"x","count":"x"}"#,
    r#"[{"op":"add"}]"#,
    r#"[{"op":"add","path":"x","value":1}]"#,
    r#"[{"op":"remove","path":""}]"#,
    r#"[{"op":"replace","path":"","value":[]}]"#,
    r#"[{"op":"replace","path":"","value":null}]"#,
    r#"[{"op":"replace","path":"","value":{}}]"#,
    r#"[{"op":"move","from":"/metadata","path":"/metadata/x"}]"#,
    r#"[{"op":"copy","from":"/spec","path":"/spec/containers/-"}]"#,
    r#"[{"op":"test","path":"/metadata/name","value":"zz"}]"#,
    r#"[{"op":"add","path":"/metadata/labels/a~2b","value":"x"}]"#,
    r#"[{"op":"add","path":"/spec/containers/99999999999999999999","value":{}}]"#,
    r#"[{"op":"add","path":"/spec/containers/-1","value":{}}]"#,
    r#"[{"op":"add","path":"/metadata/name","value":"other"}]"#,
    r#"[{"op":"add","path":"/metadata/namespace","value":"other"}]"#,
    r#"[{"op":"remove","path":"/metadata"}]"#,
    r#"[{"op":"remove","path":"/kind"}]"#,
    r#"[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]"#,
    r#"[{"op":"replace","path":"/metadata/resourceVersion","value":null}]"#,
    r#"[{"op":"add","path":"/spec","value":[]}]"#,
    r#"[{"op":"add","path":"/status","value":"x"}]"#,
    r#"[{"op":"add","path":"/metadata/generation","value":9223372036854775807}]"#,
    r#"[null]"#,
    r#"[1,2,3]"#,
    r#"{"$patch":"delete"}"#,
    r#"{"$patch":"replace"}"#,
    r#"{"$patch":7}"#,
    r#"{"spec":{"$patch":"delete"}}"#,
    r#"{"spec":{"$patch":"replace"}}"#,
    r#"{"spec":{"containers":[{"$patch":"delete"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","$patch":"replace"}]}}"#,
    r#"{"spec":{"containers":[{"$patch":"replace"}]}}"#,
    r#"{"spec":{"containers":{"$patch":"replace"}}}"#,
    r#"{"spec":{"containers":[null,7,"x"]}}"#,
    r#"{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"$patch":"delete"}]}]}}"#,
    r#"{"spec":{"$setElementOrder/containers":[{"name":"zz"}],"containers":[]}}"#,
    r#"{"spec":{"$setElementOrder/containers":"x"}}"#,
    r#"{"spec":{"$setElementOrder/containers":[null,1]}}"#,
    r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}"#,
    r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}}"#,
    r#"{"$retainKeys":["metadata"]}"#,
    r#"{"spec":{"$retainKeys":"x"}}"#,
    r#"{"spec":{"$retainKeys":[7]}}"#,
    r#"{"status":{"conditions":[{"type":"Ready","$patch":"delete"}]}}"#,
    r#"{"status":{"conditions":[{"$patch":"merge"}]}}"#,
    r#"{"status":{"containerStatuses":[{"$patch":"delete"}]}}"#,
];

/// Literals that trip parsers: JSON edge cases first, then YAML ones.
const NASTY: &[&str] = &[
    r#"{"a":1e999}"#,
    r#"{"a":"\ud800"}"#,
    "\u{feff}{}",
    r#"{"a":1,"a":2}"#,
    r#"{"metadata":{"name":"a\u0000b"}}"#,
    r#"{"metadata":{"name":"é"}}"#,
    r#"{"metadata":{"name":"..."}}"#,
    r#"{"a":18446744073709551616}"#,
    r#"{"a":NaN}"#,
    "{'a':1}",
    r#"{"a":1,}"#,
    r#"{"a":1}{"b":2}"#,
    "/* c */ {}",
    "[1,2",
    "{\"a\":\"\\x\"}",
    "&a [*a]",
    "*undefined",
    "a: !!binary zzz",
    "? [a]\n: b",
    "{a: 1, a: 2}",
    "---\na: 1\n---\nb: 2\n",
    "a: !!float abc",
    "<<: *x",
    "a: 1e99999",
    "a: 99999999999999999999999",
    "a: [1, 2",
    "\"unterminated",
    "a: |\n  block\n b: c",
    "%YAML 9.9\n---\na: 1",
    "!custom {a: 1}",
    "base: &x {name: y}\nmetadata: *x",
    "metadata:\n  name: [a, b]",
    "metadata: {name: 7}",
    "~: 1",
    "{[1]: 2}",
    "{{a: 1}: 2}",
    "1.5: x\ntrue: y\nnull: z",
    "metadata:\n  name: x\n  labels: {a: [1]}",
    "metadata:\n  name: x\n    bad: indent",
    "\t",
    "- - - - - - - - x",
    "a: &a\n  b: *a",
    "key: 'unterminated",
    "? ? ? x",
];

/// Query fragments: garbage selectors, resourceVersions, numbers out of range, log and exec options.
const QUERY_FRAGMENTS: &[&str] = &[
    "watch=1",
    "watch=true",
    "watch=false",
    "watch",
    "resourceVersion=zz",
    "resourceVersion=-1",
    "resourceVersion=18446744073709551616",
    "resourceVersion=0",
    "resourceVersion=1",
    "resourceVersion=",
    "resourceVersionMatch=Bogus",
    "labelSelector=%%%",
    "labelSelector=a%20in%20(",
    "labelSelector=!!",
    "labelSelector=%C3%A9%3D%E2%82%AC",
    "labelSelector=a%3D%3D%3Db",
    "labelSelector=(((",
    "labelSelector=a%20notin%20(%C3%A9",
    "labelSelector=app%3Dfz",
    "fieldSelector=spec.foo%3D1",
    "fieldSelector=metadata.name%3D%3D%3D",
    "fieldSelector=%E2%82%AC",
    "fieldSelector=metadata.name!%3D",
    "fieldSelector=,,,",
    "fieldSelector=metadata.name%3Dp",
    "timeoutSeconds=-5",
    "timeoutSeconds=abc",
    "timeoutSeconds=99999999999999999999",
    "limit=-1",
    "limit=abc",
    "continue=%FF",
    "gracePeriodSeconds=x",
    "gracePeriodSeconds=-1",
    "gracePeriodSeconds=0",
    "gracePeriodSeconds=99999999999999999",
    "gracePeriodSeconds=9223372036854775807",
    "propagationPolicy=Bogus",
    "dryRun=All",
    "dryRun=",
    "fieldManager=",
    "fieldManager=fz",
    "fieldValidation=Strict",
    "force=true",
    "force=",
    "container=zz",
    "container=c",
    "container=",
    "command=ls",
    "command=",
    "stdout=1",
    "stdin=1",
    "tty=1",
    "tailLines=-1",
    "tailLines=zz",
    "tailLines=99999999999999999999",
    "limitBytes=zz",
    "limitBytes=0",
    "limitBytes=-7",
    "sinceSeconds=-5",
    "sinceSeconds=99999999999999999",
    "sinceSeconds=9000000000000000",
    "sinceSeconds=-9223372036854775808",
    "sinceTime=garbage",
    "sinceTime=9999-12-31T23:59:59Z",
    "sinceTime=0001-01-01T00:00:00Z",
    "timestamps=1",
    "follow=1",
    "previous=1",
    "includeObject=Bogus",
    "includeObject=Object",
    "sendInitialEvents=true",
    "allowWatchBookmarks=true",
    "%ZZ=%ZZ",
    "&&&",
    "=",
    "a=%FF%FE",
    "pretty=true",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-garbage;;=",
    "*/*",
    "",
];

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
    "application/vnd.kubernetes.protobuf",
    "*/*",
    "garbage;;;",
    "application/json;as=Table",
];

/// One path the batch aims at, with the kind of body it expects.
struct FuzzPath {
    path: String,
    sample: Sample,
    /// The object's name for item paths (None for collections).
    name: Option<String>,
}

fn fuzz_paths(node: &str) -> Vec<FuzzPath> {
    let ns = format!("/api/v1/namespaces/{FUZZ_NS}");
    let p = |path: String, sample: Sample, name: Option<&str>| FuzzPath {
        path,
        sample,
        name: name.map(str::to_string),
    };
    let node_name = node;
    vec![
        // Core, namespaced.
        p(format!("{ns}/pods"), Sample::Pod, None),
        p(format!("{ns}/pods/p"), Sample::Pod, Some("p")),
        p(format!("{ns}/pods/ghost"), Sample::Pod, Some("ghost")),
        p(format!("{ns}/pods/p/status"), Sample::PodStatus, Some("p")),
        p(format!("{ns}/pods/p/binding"), Sample::Binding, Some("p")),
        p(format!("{ns}/pods/p/log"), Sample::Nothing, Some("p")),
        p(format!("{ns}/pods/p/exec"), Sample::Nothing, Some("p")),
        p(format!("{ns}/pods/ghost/log"), Sample::Nothing, Some("ghost")),
        p(format!("{ns}/configmaps"), Sample::ConfigMap, None),
        p(format!("{ns}/configmaps/cm"), Sample::ConfigMap, Some("cm")),
        p(format!("{ns}/secrets"), Sample::Secret, None),
        p(format!("{ns}/secrets/s"), Sample::Secret, Some("s")),
        p(format!("{ns}/services"), Sample::Service, None),
        p(format!("{ns}/services/svc"), Sample::Service, Some("svc")),
        p(format!("{ns}/services/svc/status"), Sample::Service, Some("svc")),
        p(format!("{ns}/events"), Sample::Event, None),
        p(format!("{ns}/events/ev"), Sample::Event, Some("ev")),
        p(
            "/api/v1/namespaces/nope/configmaps/cm".into(),
            Sample::ConfigMap,
            Some("cm"),
        ),
        p("/api/v1/pods".into(), Sample::Pod, None),
        p("/api/v1/configmaps".into(), Sample::ConfigMap, None),
        // Core, cluster-scoped.
        p("/api/v1/namespaces".into(), Sample::Namespace, None),
        p(ns.clone(), Sample::Namespace, Some(FUZZ_NS)),
        p(format!("{ns}/status"), Sample::Namespace, Some(FUZZ_NS)),
        p(format!("{ns}/finalize"), Sample::NamespaceFinalize, Some(FUZZ_NS)),
        p("/api/v1/nodes".into(), Sample::Node, None),
        p(format!("/api/v1/nodes/{node}"), Sample::Node, Some(node_name)),
        p(format!("/api/v1/nodes/{node}/status"), Sample::Node, Some(node_name)),
        p(
            format!("/api/v1/nodes/{node}/proxy/metrics"),
            Sample::Nothing,
            Some(node_name),
        ),
        // Named groups.
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments"),
            Sample::Deployment,
            None,
        ),
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments/d"),
            Sample::Deployment,
            Some("d"),
        ),
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments/d/status"),
            Sample::Deployment,
            Some("d"),
        ),
        p("/apis/apps/v1/deployments".into(), Sample::Deployment, None),
        p(
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases"),
            Sample::Lease,
            None,
        ),
        p(
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases/l"),
            Sample::Lease,
            Some("l"),
        ),
        p(
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices"),
            Sample::EndpointSlice,
            None,
        ),
        p(
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices/es"),
            Sample::EndpointSlice,
            Some("es"),
        ),
        p("/apis/node.k8s.io/v1/runtimeclasses".into(), Sample::RuntimeClass, None),
        p(
            "/apis/node.k8s.io/v1/runtimeclasses/rc".into(),
            Sample::RuntimeClass,
            Some("rc"),
        ),
        // Discovery, OpenAPI, health, unknown.
        p("/api".into(), Sample::Nothing, None),
        p("/api/v1".into(), Sample::Nothing, None),
        p("/apis".into(), Sample::Nothing, None),
        p("/apis/apps".into(), Sample::Nothing, None),
        p("/apis/apps/v1".into(), Sample::Nothing, None),
        p("/version".into(), Sample::Nothing, None),
        p("/openapi/v3".into(), Sample::Nothing, None),
        p("/openapi/v3/api/v1".into(), Sample::Nothing, None),
        p("/healthz".into(), Sample::Nothing, None),
        p("/api/v1/widgets".into(), Sample::Nothing, None),
        p(format!("{ns}/pods/p/teleport"), Sample::Nothing, Some("p")),
        p("/nonsense".into(), Sample::Nothing, None),
    ]
}

/// One request of the batch.
#[derive(Debug, Clone)]
struct FuzzRequest {
    method: Method,
    /// Path and query.
    path: String,
    content_type: Option<&'static str>,
    accept: Option<&'static str>,
    body: bytes::Bytes,
    body_kind: &'static str,
}

impl FuzzRequest {
    fn describe(&self) -> String {
        let prefix: String = String::from_utf8_lossy(&self.body[..self.body.len().min(120)])
            .chars()
            .map(|c| if c.is_control() { '·' } else { c })
            .collect();
        format!(
            "{} {} content-type={:?} accept={:?} body[{}; {} bytes]={prefix:?}",
            self.method,
            self.path,
            self.content_type.unwrap_or("(none)"),
            self.accept.unwrap_or("(none)"),
            self.body_kind,
            self.body.len()
        )
    }
}

/// A body of the chosen kind for a path.
fn fuzz_body(rng: &mut XorShift, target: &FuzzPath, content_type: &str, node: &str) -> (&'static str, Vec<u8>) {
    let name = target.name.clone().unwrap_or_else(|| format!("fz-{}", rng.below(1000)));
    let mut sample = sample_object(target.sample, &name, node);
    if content_type == "application/json-patch+json" && rng.chance(70) {
        sample = json!([{"op": "replace", "path": "/metadata/labels", "value": {"fz": "1"}},
                        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    }
    let yaml = content_type.contains("yaml") && rng.chance(70);
    let render = |v: &Value| -> Vec<u8> {
        if yaml {
            to_yaml(v).into_bytes()
        } else {
            v.to_string().into_bytes()
        }
    };
    let roll = rng.below(100);
    match roll {
        0..=13 => {
            let len = if rng.chance(80) {
                rng.below(512)
            } else {
                rng.below(16 * 1024)
            };
            ("random bytes", rng.bytes(len))
        }
        14..=33 => {
            let full = render(&sample);
            let cut = rng.below(full.len().max(1));
            ("truncated object", full[..cut].to_vec())
        }
        34..=43 => {
            let mut bytes = render(&sample);
            for _ in 0..=rng.below(8) {
                let at = rng.below(bytes.len().max(1));
                if let Some(b) = bytes.get_mut(at) {
                    *b = rng.bytes(1)[0];
                }
            }
            ("mutated object", bytes)
        }
        44..=53 => ("valid object", render(&sample)),
        54..=67 => ("wrong shape", rng.pick(WRONG_SHAPES).as_bytes().to_vec()),
        68..=79 => {
            let shape = *rng.pick::<&str>(WRONG_SHAPES);
            let shape: Value = serde_json::from_str(shape).unwrap_or(Value::Null);
            overlay(&mut sample, &shape);
            ("object with a wrong-shape part", render(&sample))
        }
        80..=85 => ("deep nesting", deep_body(rng)),
        86..=91 => ("huge strings", huge_body(rng, &sample)),
        92..=96 => ("nasty literal", rng.pick(NASTY).as_bytes().to_vec()),
        _ => ("empty", if rng.chance(50) { Vec::new() } else { b" \n\t ".to_vec() }),
    }
}

fn deep_body(rng: &mut XorShift) -> Vec<u8> {
    const DEPTH: usize = 10_000;
    match rng.below(8) {
        0 => "[".repeat(DEPTH),
        1 => format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        2 => format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH)),
        3 => format!("{}x", "- ".repeat(DEPTH)),
        4 => "{a: ".repeat(DEPTH),
        5 => (0..600).map(|i| format!("{}k:\n", " ".repeat(i))).collect(),
        // Deep, but within serde_json's recursion limit: reaches the handlers.
        6 => format!(
            r#"{{"metadata":{{"name":"deep"}},"spec":{}{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        ),
        _ => format!(
            r#"{{"metadata":{{"name":"deep","labels":{{"a":"b"}}}},"data":{}"x"{}}}"#,
            r#"{"a":"#.repeat(120),
            "}".repeat(120)
        ),
    }
    .into_bytes()
}

fn huge_body(rng: &mut XorShift, sample: &Value) -> Vec<u8> {
    let size = *rng.pick(&[64 * 1024, 512 * 1024, 1024 * 1024, MAX_BODY - 1024, MAX_BODY + 10]);
    // Built by splicing, not by serialising: escaping megabytes is slow in a debug build.
    let big = "x".repeat(size);
    match rng.below(7) {
        0 => format!(r#"{{"metadata":{{"name":"{big}"}}}}"#),
        1 => {
            // Valid but for a huge label; the fixed name keeps at most one such object per kind.
            let mut v = sample.clone();
            overlay(
                &mut v,
                &json!({"metadata": {"name": "huge", "labels": {"k": "@HUGE@"}}}),
            );
            v.to_string().replacen("@HUGE@", &big, 1)
        }
        2 => format!(r#"{{"metadata":{{"name":"huge"}},"data":{{"k":"{big}"}}}}"#),
        3 => format!(r#"{{"metadata":{{"name":"huge"}},"{big}":1}}"#),
        4 => format!(r#""{big}""#),
        5 => format!("[{}0]", "0,".repeat(size / 2)),
        _ => "1".repeat(size),
    }
    .into_bytes()
}

/// Options of the log handler, with numbers and times out of range.
const LOG_FRAGMENTS: &[&str] = &[
    "container=c",
    "container=zz",
    "tailLines=-1",
    "tailLines=0",
    "tailLines=99999999999999999999",
    "limitBytes=0",
    "limitBytes=-7",
    "limitBytes=18446744073709551615",
    "sinceSeconds=-5",
    "sinceSeconds=0",
    "sinceSeconds=99999999999999999",
    "sinceSeconds=9000000000000000",
    "sinceSeconds=-9223372036854775808",
    "sinceSeconds=9223372036854775807",
    "sinceTime=garbage",
    "sinceTime=9999-12-31T23:59:59Z",
    "sinceTime=0001-01-01T00:00:00Z",
    "sinceTime=2026-01-01T00:00:00%2B25:00",
    "timestamps=1",
    "follow=1",
    "previous=1",
];

/// Options of the exec handler.
const EXEC_FRAGMENTS: &[&str] = &[
    "command=ls",
    "command=",
    "command=%00",
    "container=c",
    "container=zz",
    "stdin=1",
    "stdout=0",
    "stderr=0",
    "tty=1",
];

/// Options of deletes.
const DELETE_FRAGMENTS: &[&str] = &[
    "gracePeriodSeconds=x",
    "gracePeriodSeconds=-1",
    "gracePeriodSeconds=0",
    "gracePeriodSeconds=1",
    "gracePeriodSeconds=99999999999999999",
    "gracePeriodSeconds=9223372036854775807",
    "gracePeriodSeconds=-9223372036854775808",
    "propagationPolicy=Bogus",
    "dryRun=All",
    "labelSelector=a%20in%20(",
    "labelSelector=app%3Dfz",
    "fieldSelector=spec.foo%3D1",
];

fn fuzz_query(rng: &mut XorShift, method: &Method, path: &str) -> String {
    if rng.chance(40) {
        return String::new();
    }
    let special: &[&str] = if path.ends_with("/log") {
        LOG_FRAGMENTS
    } else if path.ends_with("/exec") {
        EXEC_FRAGMENTS
    } else if *method == Method::DELETE {
        DELETE_FRAGMENTS
    } else {
        QUERY_FRAGMENTS
    };
    let mut parts: Vec<&str> = (0..=rng.below(4))
        .map(|_| {
            if rng.chance(60) {
                *rng.pick(special)
            } else {
                *rng.pick(QUERY_FRAGMENTS)
            }
        })
        .collect();
    if parts.iter().any(|p| p.starts_with("watch")) || rng.chance(5) {
        // Watches stream: keep them short (the last occurrence of a parameter wins).
        parts.push("timeoutSeconds=1");
    }
    format!("?{}", parts.join("&"))
}

fn fuzz_requests(seed: u64, count: usize, node: &str) -> Vec<FuzzRequest> {
    let mut rng = XorShift(seed);
    let paths = fuzz_paths(node);
    let methods = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let target = &paths[i % paths.len()];
        let method = match (i / paths.len()) % 5 {
            _ if rng.chance(2) => {
                Method::from_bytes(rng.pick(&["HEAD", "OPTIONS", "FUZZ"]).as_bytes()).unwrap_or(Method::OPTIONS)
            }
            n => methods[n].clone(),
        };
        let content_type = if rng.chance(75) {
            match method {
                Method::PATCH => *rng.pick(PATCH_TYPES),
                Method::GET | Method::HEAD => *rng.pick(&["", "application/json"]),
                _ => *rng.pick(&["application/json", "application/yaml"]),
            }
        } else {
            *rng.pick(CONTENT_TYPES)
        };
        let (body_kind, body) = if matches!(method, Method::GET | Method::HEAD) && rng.chance(70) {
            ("none", Vec::new())
        } else {
            fuzz_body(&mut rng, target, content_type, node)
        };
        let mut query = fuzz_query(&mut rng, &method, &target.path);
        if content_type == "application/apply-patch+yaml" && rng.chance(60) {
            query.push_str(if query.is_empty() {
                "?fieldManager=fz"
            } else {
                "&fieldManager=fz"
            });
        }
        let accept = if rng.chance(80) { None } else { Some(*rng.pick(ACCEPTS)) };
        out.push(FuzzRequest {
            method,
            path: format!("{}{query}", target.path),
            content_type: (!content_type.is_empty()).then_some(content_type),
            accept,
            body: body.into(),
            body_kind,
        });
    }
    out
}

/// How the server answered one request.
enum Answer {
    Response {
        code: u16,
        content_type: String,
        body: Vec<u8>,
    },
    Failure(String),
}

async fn fire(client: reqwest::Client, base: String, token: String, request: FuzzRequest) -> (FuzzRequest, Answer) {
    let mut rb = client
        .request(request.method.clone(), format!("{base}{}", request.path))
        .bearer_auth(token)
        .body(request.body.clone());
    if let Some(ct) = request.content_type {
        rb = rb.header(CONTENT_TYPE, ct);
    }
    if let Some(accept) = request.accept {
        rb = rb.header(ACCEPT, accept);
    }
    let exchange = async {
        let mut resp = rb
            .send()
            .await
            .map_err(|e| format!("no response: {}", error_chain(&e)))?;
        let code = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        if (200..300).contains(&code) {
            // Watches and followed logs stream: take what arrives in a short window.
            let window = tokio::time::Instant::now() + Duration::from_secs(2);
            loop {
                match tokio::time::timeout_at(window, resp.chunk()).await {
                    Err(_) | Ok(Ok(None)) => break,
                    Ok(Ok(Some(chunk))) => {
                        let room = 4096usize.saturating_sub(body.len());
                        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                    Ok(Err(e)) => return Err(format!("{code} body broke off: {}", error_chain(&e))),
                }
            }
        } else {
            body = tokio::time::timeout(Duration::from_secs(10), resp.bytes())
                .await
                .map_err(|_| format!("{code} body did not complete within 10s"))?
                .map_err(|e| format!("{code} body broke off: {}", error_chain(&e)))?
                .to_vec();
        }
        Ok::<_, String>((code, content_type, body))
    };
    let answer = match tokio::time::timeout(Duration::from_secs(30), exchange).await {
        Err(_) => Answer::Failure("no answer within 30s".into()),
        Ok(Err(e)) => Answer::Failure(e),
        Ok(Ok((code, content_type, body))) => Answer::Response {
            code,
            content_type,
            body,
        },
    };
    (request, answer)
}

/// The name of the fuzzed server's threads.
const SERVER_THREADS: &str = "fuzzed-server";

/// Panics raised on the fuzzed server's threads.
static SERVER_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A runtime of its own for the fuzzed cluster, so that a panic on one of its threads is
/// the server's (and not another test's or the client's).
struct ServerRuntime(Option<tokio::runtime::Runtime>);

impl ServerRuntime {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(SERVER_THREADS)
            .enable_all()
            .build()
            .expect("server runtime");
        Self(Some(rt))
    }

    /// Starts a cluster whose tasks all run on this runtime.
    async fn start_cluster(&self) -> Cluster {
        let rt = self.0.as_ref().expect("the runtime is up");
        rt.spawn(common::start()).await.expect("the cluster starts")
    }
}

impl Drop for ServerRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

fn record_server_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            if thread.name() == Some(SERVER_THREADS) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                SERVER_PANICS
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!("{message} at {at}"));
            }
            previous(info);
        }));
    });
}

fn body_prefix(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(200)]).replace('\n', "⏎")
}

/// Creates the objects the batch's item paths point at, with `p` bound and running.
async fn seed_fuzz_objects(api: &Api, node: &str) {
    let ns = format!("/api/v1/namespaces/{FUZZ_NS}");
    api.create("/api/v1/namespaces", sample_object(Sample::Namespace, FUZZ_NS, node))
        .await;
    api.create(&format!("{ns}/pods"), pod("p")).await;
    make_running(api, FUZZ_NS, "p").await;
    let seeds = [
        ("configmaps", Sample::ConfigMap, "cm"),
        ("secrets", Sample::Secret, "s"),
        ("services", Sample::Service, "svc"),
        ("events", Sample::Event, "ev"),
    ];
    for (plural, sample, name) in seeds {
        api.create(&format!("{ns}/{plural}"), sample_object(sample, name, node))
            .await;
    }
    let named = [
        (
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments"),
            Sample::Deployment,
            "d",
        ),
        (
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases"),
            Sample::Lease,
            "l",
        ),
        (
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices"),
            Sample::EndpointSlice,
            "es",
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses".to_string(),
            Sample::RuntimeClass,
            "rc",
        ),
    ];
    for (collection, sample, name) in named {
        api.create(&collection, sample_object(sample, name, node)).await;
    }
}

/// What is wrong with the server after the batch: it must still be ready and serve a normal
/// create and get.
async fn still_serving(api: &Api) -> Vec<String> {
    let mut problems = Vec::new();
    let ready = api.get("/readyz").await;
    if (ready.code, ready.text().as_str()) != (200, "ok") {
        problems.push(format!(
            "after the batch /readyz answered {} {}",
            ready.code,
            ready.text()
        ));
    }
    let ns = api
        .send_json(
            Method::POST,
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "after-fuzz"}}),
        )
        .await;
    let mut cm = configmap("after");
    cm["data"] = json!({"key": "value"});
    let created = api
        .send_json(Method::POST, "/api/v1/namespaces/after-fuzz/configmaps", &cm)
        .await;
    let got = api.get("/api/v1/namespaces/after-fuzz/configmaps/after").await;
    let data = serde_json::from_slice::<Value>(&got.body)
        .map(|v| v["data"].clone())
        .ok();
    if (ns.code, created.code, got.code) != (201, 201, 200) || data != Some(json!({"key": "value"})) {
        problems.push(format!(
            "after the batch a create and get round-trip failed: namespace {} {}, configmap {} {}, get {} {}",
            ns.code,
            ns.text(),
            created.code,
            created.text(),
            got.code,
            got.text()
        ));
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_batch_never_breaks_the_server() {
    record_server_panics();
    let server = ServerRuntime::new();
    let api = Api::with(server.start_cluster().await);
    let node = api
        .cluster
        .node_ips()
        .first()
        .map(|(n, _)| n.clone())
        .expect("the cluster has a node");
    seed_fuzz_objects(&api, &node).await;

    let generating = std::time::Instant::now();
    let requests = fuzz_requests(0x5EED_F00D_CAFE_D00D, FUZZ_REQUESTS, &node);
    let generated = generating.elapsed();
    // Deletes go last, so the batch's other requests meet the seeded objects.
    let (deletes, others): (Vec<_>, Vec<_>) = requests.into_iter().partition(|r| r.method == Method::DELETE);
    let started = std::time::Instant::now();
    let base = api.cluster.url().to_string();
    let token = api.cluster.token().to_string();
    let mut answers = Vec::new();
    for phase in [others, deletes] {
        let batch: Vec<(FuzzRequest, Answer)> = futures::stream::iter(
            phase
                .into_iter()
                .map(|r| fire(api.client.clone(), base.clone(), token.clone(), r)),
        )
        .buffer_unordered(FUZZ_CONCURRENCY)
        .collect()
        .await;
        answers.extend(batch);
    }
    let elapsed = started.elapsed();

    let mut defects = Vec::new();
    let mut codes: BTreeMap<u16, usize> = BTreeMap::new();
    for (request, answer) in &answers {
        match answer {
            Answer::Failure(why) => defects.push(format!("{why}\n    request: {}", request.describe())),
            Answer::Response {
                code,
                content_type,
                body,
            } => {
                *codes.entry(*code).or_default() += 1;
                if *code >= 500 {
                    defects.push(format!(
                        "{code} answered\n    request: {}\n    response: {}",
                        request.describe(),
                        body_prefix(body)
                    ));
                } else if !(200..300).contains(code)
                    && request.method != Method::HEAD
                    && content_type.starts_with("application/json")
                    && let Some(problem) = status_problem(*code, body)
                {
                    defects.push(format!(
                        "{code} without a proper Status ({problem})\n    request: {}\n    response: {}",
                        request.describe(),
                        body_prefix(body)
                    ));
                }
            }
        }
    }
    defects.extend(still_serving(&api).await);
    let panics = SERVER_PANICS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for p in &panics {
        defects.push(format!("server panic: {p}"));
    }
    println!(
        "fuzz batch: {} requests generated in {:.1}s, sent in {:.1}s; status codes {codes:?}",
        answers.len(),
        generated.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    let past_routing = answers
        .iter()
        .filter(|(_, a)| !matches!(a, Answer::Response { code: 405, .. }))
        .count();
    assert!(
        past_routing >= 2000,
        "only {past_routing} requests got past method routing"
    );
    assert!(
        defects.is_empty(),
        "{} of {} fuzz requests went wrong:\n{}",
        defects.len(),
        answers.len(),
        defects.join("\n")
    );
}
