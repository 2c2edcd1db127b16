//! RBAC in the bundled cluster, through kube-rs as a client sees it: `deploy/rbac.yaml`
//! applied, a token minted for its ServiceAccount with TokenRequest, and with that token what a
//! `mixcheck run` does succeeds while anything else gets upstream's 403 text; access reviews
//! answer per the role; expired, unknown and orphaned tokens are 401; impersonation, RoleBinding
//! scoping, apply-creates-needs-create and the exec upgrade check. The real kubectl
//! (`kubectl create token`, `kubectl auth can-i --as=…`) is at the end, ignored without kubectl.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::{Value, json};
use simcluster::{Cluster, ClusterConfig, Topology};

const SA_USER: &str = "system:serviceaccount:mixcheck:mixcheck";

/// A bundled cluster without add-ons (faster; the RBAC checks need none) of `version`.
async fn cluster(version: &str) -> Cluster {
    let mut topology = Topology::default_cluster().instant().on_wall_clock();
    topology.kubernetes_version = version.into();
    topology.timing.scale = 0.2;
    let mut config = ClusterConfig::new(topology);
    config.addons = false;
    common::start_with(config).await
}

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative)
}

/// The documents of a multi-document YAML file (comment-only documents dropped).
fn documents(text: &str) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(["---"]) {
        if line.trim_end() == "---" {
            if current
                .lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            {
                docs.push(serde_saphyr::from_str::<Value>(&current).expect("YAML document"));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

/// Applies every object of `path` server-side, finding each kind by discovery (as kubectl).
async fn apply_file(client: &Client, path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut applied = Vec::new();
    for doc in documents(&text) {
        let api_version = doc["apiVersion"].as_str().expect("apiVersion");
        let kind = doc["kind"].as_str().expect("kind");
        let name = doc["metadata"]["name"].as_str().expect("name");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let (ar, caps) = kube::discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind))
            .await
            .unwrap_or_else(|e| panic!("discovery of {kind}: {e}"));
        let api: Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => {
                let ns = doc["metadata"]["namespace"].as_str().unwrap_or("default");
                Api::namespaced_with(client.clone(), ns, &ar)
            }
            Scope::Cluster => Api::all_with(client.clone(), &ar),
        };
        api.patch(name, &PatchParams::apply("rbac-test").force(), &Patch::Apply(&doc))
            .await
            .unwrap_or_else(|e| panic!("apply {kind} {name}: {e}"));
        applied.push((kind.to_string(), name.to_string()));
    }
    applied
}

async fn token_request(client: &Client, ns: &str, sa: &str, spec: Value) -> Result<TokenRequest, kube::Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let request: TokenRequest = serde_json::from_value(json!({"spec": spec})).expect("token request");
    accounts
        .create_token_request(sa, &PostParams::default(), &request)
        .await
}

async fn mint(client: &Client, ns: &str, sa: &str) -> String {
    let tr = token_request(client, ns, sa, json!({"audiences": []}))
        .await
        .expect("token request");
    tr.status.expect("status").token
}

/// A kube-rs client for the cluster authenticating with `token`.
async fn client_with(cluster: &Cluster, token: &str) -> Client {
    let text = cluster.kubeconfig().replace(cluster.token(), token);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    Client::try_from(config).expect("client")
}

/// The message of a 403, or a panic saying what came instead.
fn forbidden<T: std::fmt::Debug>(what: &str, r: Result<T, kube::Error>) -> String {
    match r {
        Err(kube::Error::Api(s)) if s.code == 403 => {
            assert_eq!(s.reason, "Forbidden", "{what}");
            s.message.clone()
        }
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

fn unauthorized<T: std::fmt::Debug>(what: &str, r: Result<T, kube::Error>) {
    match r {
        Err(kube::Error::Api(s)) if s.code == 401 => assert_eq!(s.message, "Unauthorized", "{what}"),
        other => panic!("{what}: expected 401 Unauthorized, got {other:?}"),
    }
}

async fn access_review(client: &Client, attributes: Value) -> (bool, String) {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = serde_json::from_value(json!({"spec": attributes})).expect("review");
    let status = reviews
        .create(&PostParams::default(), &review)
        .await
        .expect("reviewed")
        .status
        .expect("status");
    (status.allowed, status.reason.unwrap_or_default())
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
            "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}})
}

/// Everything `mixcheck run`'s preflight reviews (runner/src/run/mod.rs), plus what the rest of
/// a run does, with whether `deploy/rbac.yaml` grants it: verb, group, resource, subresource,
/// namespace ("" cluster-wide, `RUN` the run namespace), allowed.
const RUN: &str = "mixcheck-run1";
#[rustfmt::skip]
const PERMISSIONS: &[(&str, &str, &str, &str, &str, bool)] = &[
    ("create", "", "namespaces", "", "", true),
    ("delete", "", "namespaces", "", "", true),
    ("list", "", "namespaces", "", "", true),
    ("list", "", "nodes", "", "", true),
    ("get", "", "nodes", "proxy", "", true),
    ("create", "", "pods", "", RUN, true),
    ("patch", "", "pods", "", RUN, true),
    ("list", "", "pods", "", RUN, true),
    ("watch", "", "pods", "", RUN, true),
    ("create", "", "pods", "exec", RUN, true),
    ("get", "", "pods", "exec", RUN, true),
    ("create", "", "services", "", RUN, true),
    ("patch", "", "services", "", RUN, true),
    ("list", "", "events", "", RUN, true),
    ("watch", "", "events", "", RUN, true),
    ("list", "", "pods", "", "", true),
    ("get", "", "pods", "log", "", true),
    ("list", "apps", "daemonsets", "", "", true),
    ("list", "apps", "deployments", "", "", true),
    ("list", "", "configmaps", "", "", true),
    ("create", "", "secrets", "", RUN, true),
    // The grace-period check times its own pod's deletion (POD-TERMINATION-GRACE), and judged
    // created pods give their slot back.
    ("delete", "", "pods", "", RUN, true),
    ("patch", "", "secrets", "", RUN, true),
    ("get", "storage.k8s.io", "csinodes", "", "", true),
    // Evidence: an implicated node's Lease (its kubelet's heartbeat).
    ("get", "coordination.k8s.io", "leases", "", "kube-node-lease", true),
    ("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", true),
    // Not a run's business:
    ("get", "", "secrets", "", RUN, false),
    ("list", "", "secrets", "", "", false),
    ("get", "", "namespaces", "", "", false),
    ("get", "", "nodes", "", "", false),
    ("patch", "", "nodes", "", "", false),
    ("update", "coordination.k8s.io", "leases", "", "kube-node-lease", false),
    ("create", "apps", "deployments", "", RUN, false),
    ("create", "", "pods", "attach", RUN, false),
    ("create", "", "serviceaccounts", "token", "mixcheck", false),
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", false),
    ("impersonate", "", "users", "", "", false),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rbac_manifest_grants_a_run_what_it_needs_and_nothing_else() {
    let cluster = cluster("v1.32.3").await;
    let admin = common::kube_client(&cluster).await;
    let applied = apply_file(&admin, &repo_file("deploy/rbac.yaml")).await;
    assert_eq!(
        applied,
        [
            ("Namespace".to_string(), "mixcheck".to_string()),
            ("ServiceAccount".into(), "mixcheck".into()),
            ("ClusterRole".into(), "mixcheck".into()),
            ("ClusterRoleBinding".into(), "mixcheck".into()),
        ]
    );
    let token = mint(&admin, "mixcheck", "mixcheck").await;
    let sa = client_with(&cluster, &token).await;

    // The access reviews answer per the role, with upstream's reason.
    for (verb, group, resource, sub, ns, allowed) in PERMISSIONS {
        let (got, reason) = access_review(
            &sa,
            json!({"resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                "subresource": sub, "namespace": ns}}),
        )
        .await;
        assert_eq!(got, *allowed, "{verb} {group}/{resource}/{sub} in {ns:?}: {reason}");
        if *allowed && *resource != "selfsubjectaccessreviews" {
            assert_eq!(
                reason,
                r#"RBAC: allowed by ClusterRoleBinding "mixcheck" of ClusterRole "mixcheck" to ServiceAccount "mixcheck/mixcheck""#
            );
        }
    }
    for (path, allowed) in [("/metrics", true), ("/version", true), ("/logs", false)] {
        let (got, _) = access_review(&sa, json!({"nonResourceAttributes": {"verb": "get", "path": path}})).await;
        assert_eq!(got, allowed, "{path}");
    }

    // What a run does succeeds with the token.
    sa.apiserver_version().await.expect("GET /version");
    let nodes = Api::<Node>::all(sa.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes");
    let node = nodes.items[0].name_any();
    let configz = http::Request::get(format!("/api/v1/nodes/{node}/proxy/configz"))
        .body(Vec::new())
        .expect("request");
    sa.request_text(configz).await.expect("node proxy configz");
    let namespaces: Api<Namespace> = Api::all(sa.clone());
    let run_ns: Namespace = serde_json::from_value(json!({"metadata": {"name": RUN}})).expect("namespace");
    namespaces
        .create(&PostParams::default(), &run_ns)
        .await
        .expect("create the run namespace");
    let apply = PatchParams::apply("mixcheck").force();
    let pods: Api<Pod> = Api::namespaced(sa.clone(), RUN);
    pods.patch("srv-0", &apply, &Patch::Apply(pod("srv-0")))
        .await
        .expect("apply a pod");
    pods.get("srv-0").await.expect("get a pod");
    pods.list(&ListParams::default()).await.expect("list pods");
    let watch = pods.watch(&WatchParams::default(), "0").await.expect("watch pods");
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), watch.boxed().next())
        .await
        .expect("a watch event in time");
    assert!(matches!(first, Some(Ok(_))), "{first:?}");
    let services: Api<Service> = Api::namespaced(sa.clone(), RUN);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "srv"},
        "spec": {"selector": {"app": "srv"}, "ports": [{"port": 80}]}});
    services
        .patch("srv", &apply, &Patch::Apply(&svc))
        .await
        .expect("apply a service");
    services.get("srv").await.expect("get a service");
    let secrets: Api<Secret> = Api::namespaced(sa.clone(), RUN);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
        "stringData": {"password": "fixture"}});
    secrets
        .patch("creds", &apply, &Patch::Apply(&secret))
        .await
        .expect("apply a secret");
    Api::<Pod>::all(sa.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .expect("list a node's pods");
    Api::<Event>::namespaced(sa.clone(), RUN)
        .list(&ListParams::default())
        .await
        .expect("list events");
    Api::<ConfigMap>::all(sa.clone())
        .list(&ListParams::default().fields("metadata.name=kube-flannel-cfg"))
        .await
        .expect("list configmaps");
    Api::<DaemonSet>::all(sa.clone())
        .list(&ListParams::default())
        .await
        .expect("list daemonsets");
    Api::<Deployment>::all(sa.clone())
        .list(&ListParams::default())
        .await
        .expect("list deployments");

    // Anything else is refused with upstream's Forbidden text.
    let expect = |what: &str, r: String, message: String| assert_eq!(r, message, "{what}");
    expect(
        "read a secret",
        forbidden("get secret", secrets.get("creds").await),
        format!(
            r#"secrets "creds" is forbidden: User "{SA_USER}" cannot get resource "secrets" in API group "" in the namespace "{RUN}""#
        ),
    );
    expect(
        "list kube-system's secrets",
        forbidden(
            "list secrets",
            Api::<Secret>::namespaced(sa.clone(), "kube-system")
                .list(&ListParams::default())
                .await,
        ),
        format!(
            r#"secrets is forbidden: User "{SA_USER}" cannot list resource "secrets" in API group "" in the namespace "kube-system""#
        ),
    );
    expect(
        "delete a node",
        forbidden(
            "delete node",
            Api::<Node>::all(sa.clone())
                .delete(&node, &DeleteParams::default())
                .await,
        ),
        format!(
            r#"nodes "{node}" is forbidden: User "{SA_USER}" cannot delete resource "nodes" in API group "" at the cluster scope"#
        ),
    );
    let deployment: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}))
    .expect("deployment");
    expect(
        "create a deployment",
        forbidden(
            "create deployment",
            Api::<Deployment>::namespaced(sa.clone(), RUN)
                .create(&PostParams::default(), &deployment)
                .await,
        ),
        format!(
            r#"deployments.apps is forbidden: User "{SA_USER}" cannot create resource "deployments" in API group "apps" in the namespace "{RUN}""#
        ),
    );
    expect(
        "read its own namespace",
        forbidden("get namespace", namespaces.get("mixcheck").await),
        format!(
            r#"namespaces "mixcheck" is forbidden: User "{SA_USER}" cannot get resource "namespaces" in API group "" in the namespace "mixcheck""#
        ),
    );
    let crb: ClusterRoleBinding = serde_json::from_value(json!({"metadata": {"name": "escalate"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "mixcheck", "namespace": "mixcheck"}]}))
    .expect("binding");
    expect(
        "bind itself to cluster-admin",
        forbidden(
            "create clusterrolebinding",
            Api::<ClusterRoleBinding>::all(sa.clone())
                .create(&PostParams::default(), &crb)
                .await,
        ),
        format!(
            r#"clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "{SA_USER}" cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope"#
        ),
    );
    let logs = http::Request::get("/logs").body(Vec::new()).expect("request");
    expect(
        "a non-resource URL",
        forbidden("get /logs", sa.request_text(logs).await),
        format!(r#"forbidden: User "{SA_USER}" cannot get path "/logs""#),
    );

    // The whole Status, as on the wire.
    let reply = common::http_client(&cluster)
        .get(format!("{}/api/v1/namespaces/{RUN}/pods/srv-0/attach", cluster.url()))
        .bearer_auth(&token)
        .send()
        .await
        .expect("reply");
    assert_eq!(reply.status().as_u16(), 403);
    let status: Value = reply.json().await.expect("status JSON");
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!(r#"pods "srv-0" is forbidden: User "{SA_USER}" cannot get resource "pods/attach" in API group "" in the namespace "{RUN}""#),
            "reason": "Forbidden", "details": {"name": "srv-0", "kind": "pods"}, "code": 403})
    );

    // The rules review lists the role's rules for the token's identity.
    let rules: Api<SelfSubjectRulesReview> = Api::all(sa.clone());
    let review = serde_json::from_value(json!({"spec": {"namespace": RUN}})).expect("review");
    let status = rules
        .create(&PostParams::default(), &review)
        .await
        .expect("rules review")
        .status
        .expect("status");
    let listed: Vec<String> = status
        .resource_rules
        .iter()
        .flat_map(|r| r.resources.clone().unwrap_or_default())
        .collect();
    for r in [
        "namespaces",
        "nodes/proxy",
        "pods/exec",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
    ] {
        assert!(listed.iter().any(|l| l == r), "{r} in {listed:?}");
    }
    assert!(!listed.iter().any(|l| l == "*"), "{listed:?}");
    assert!(status.non_resource_rules.iter().any(|r| {
        r.non_resource_urls
            .as_deref()
            .is_some_and(|u| u.contains(&"/metrics".to_string()))
    }));
    assert!(!status.incomplete);

    namespaces
        .delete(RUN, &DeleteParams::background())
        .await
        .expect("delete the run namespace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_are_issued_and_checked() {
    let cluster = cluster("v1.32.3").await;
    common::namespace(&cluster, "tok");
    let admin = common::kube_client(&cluster).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "tok");
    let robot: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "robot"}})).expect("sa");
    accounts
        .create(&PostParams::default(), &robot)
        .await
        .expect("service account");

    // Defaults and bounds of a TokenRequest.
    let before = chrono::Utc::now();
    let tr = token_request(&admin, "tok", "robot", json!({"audiences": []}))
        .await
        .expect("token");
    let spec = &tr.spec;
    assert_eq!(spec.expiration_seconds, Some(3600));
    assert_eq!(spec.audiences, ["https://kubernetes.default.svc.cluster.local"]);
    let status = tr.status.expect("status");
    let lifetime = status.expiration_timestamp.0.as_second() - before.timestamp();
    assert!((3598..=3601).contains(&lifetime), "{lifetime}");
    assert_eq!(status.token.split('.').count(), 3, "JWT-shaped");
    let tr = token_request(
        &admin,
        "tok",
        "robot",
        json!({"audiences": [], "expirationSeconds": 7200}),
    )
    .await
    .expect("token");
    assert_eq!(tr.spec.expiration_seconds, Some(7200));
    match token_request(
        &admin,
        "tok",
        "robot",
        json!({"audiences": [], "expirationSeconds": 60}),
    )
    .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert_eq!(
                s.message,
                r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"#
            );
        }
        other => panic!("expected 422, got {other:?}"),
    }
    match token_request(&admin, "tok", "ghost", json!({"audiences": []})).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.message, r#"serviceaccounts "ghost" not found"#);
        }
        other => panic!("expected 404, got {other:?}"),
    }

    // A valid token authenticates as the account (the review answers for it).
    let token = mint(&admin, "tok", "robot").await;
    let robot_client = client_with(&cluster, &token).await;
    let (allowed, reason) = access_review(
        &robot_client,
        json!({"resourceAttributes": {"verb": "create", "group": "authorization.k8s.io",
            "resource": "selfsubjectaccessreviews"}}),
    )
    .await;
    assert!(allowed);
    assert_eq!(
        reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated""#
    );
    let denied = forbidden(
        "list pods",
        Api::<Pod>::namespaced(robot_client.clone(), "tok")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        denied,
        r#"pods is forbidden: User "system:serviceaccount:tok:robot" cannot list resource "pods" in API group "" in the namespace "tok""#
    );

    // Expired, unknown, for another audience: 401.
    let expiring = mint(&admin, "tok", "robot").await;
    let expiring_client = client_with(&cluster, &expiring).await;
    expiring_client
        .apiserver_version()
        .await
        .expect("valid until it expires");
    assert!(cluster.store().tokens().expire(&expiring));
    unauthorized("expired", expiring_client.apiserver_version().await);
    let forged = format!("{}.AAAA", token.rsplit_once('.').map(|(head, _)| head).unwrap_or(""));
    unauthorized(
        "unknown",
        client_with(&cluster, &forged).await.apiserver_version().await,
    );
    unauthorized(
        "garbage",
        client_with(&cluster, "not-a-token").await.apiserver_version().await,
    );
    let vault = token_request(&admin, "tok", "robot", json!({"audiences": ["vault"]}))
        .await
        .expect("token for vault");
    assert_eq!(vault.spec.audiences, ["vault"]);
    let vault_token = vault.status.expect("status").token;
    unauthorized(
        "another audience",
        client_with(&cluster, &vault_token).await.apiserver_version().await,
    );

    // A token bound to a pod dies with the pod.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "tok");
    let mut nowhere = pod("bound");
    nowhere["spec"]["serviceAccountName"] = json!("robot");
    nowhere["spec"]["nodeSelector"] = json!({"no-such-node": "x"});
    pods.create(&PostParams::default(), &serde_json::from_value(nowhere).expect("pod"))
        .await
        .expect("pod");
    let bound = token_request(
        &admin,
        "tok",
        "robot",
        json!({"audiences": [], "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "bound"}}),
    )
    .await
    .expect("bound token")
    .status
    .expect("status")
    .token;
    let bound_client = client_with(&cluster, &bound).await;
    bound_client
        .apiserver_version()
        .await
        .expect("valid while the pod exists");
    pods.delete("bound", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete pod");
    common::eventually("the pod gone", || async {
        pods.get_opt("bound").await.ok()?.is_none().then_some(())
    })
    .await;
    unauthorized("bound to a deleted pod", bound_client.apiserver_version().await);

    // Deleting the account revokes its tokens; a new account of the same name has another uid.
    accounts
        .delete("robot", &DeleteParams::default())
        .await
        .expect("delete account");
    unauthorized("deleted account", robot_client.apiserver_version().await);
    accounts
        .create(&PostParams::default(), &robot)
        .await
        .expect("re-create");
    unauthorized("re-created account", robot_client.apiserver_version().await);
    let fresh = mint(&admin, "tok", "robot").await;
    client_with(&cluster, &fresh)
        .await
        .apiserver_version()
        .await
        .expect("a new token works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_is_authorized_and_applied() {
    let cluster = cluster("v1.32.3").await;
    let admin = common::kube_client(&cluster).await;
    apply_file(&admin, &repo_file("deploy/rbac.yaml")).await;
    let http = common::http_client(&cluster);
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "nodes"}}});
    let ask = |token: String, headers: Vec<(&'static str, &'static str)>| {
        let mut rb = http
            .post(format!(
                "{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                cluster.url()
            ))
            .bearer_auth(token)
            .json(&review);
        for (k, v) in headers {
            rb = rb.header(k, v);
        }
        rb.send()
    };
    // The admin as the service account: the review answers for the account.
    let reply = ask(cluster.token().to_string(), vec![("Impersonate-User", SA_USER)])
        .await
        .expect("reply");
    assert_eq!(reply.status().as_u16(), 201);
    let body: Value = reply.json().await.expect("json");
    assert_eq!(body["status"]["allowed"], true);
    assert_eq!(
        body["status"]["reason"],
        r#"RBAC: allowed by ClusterRoleBinding "mixcheck" of ClusterRole "mixcheck" to ServiceAccount "mixcheck/mixcheck""#
    );
    // As a user with no bindings: not allowed (and no reason).
    let reply = ask(
        cluster.token().to_string(),
        vec![("Impersonate-User", "jane"), ("Impersonate-Group", "developers")],
    )
    .await
    .expect("reply");
    let body: Value = reply.json().await.expect("json");
    assert_eq!(body["status"]["allowed"], false);
    // The impersonated identity is authorized for the request itself too.
    let reply = http
        .get(format!("{}/api/v1/nodes", cluster.url()))
        .bearer_auth(cluster.token())
        .header("Impersonate-User", "jane")
        .send()
        .await
        .expect("reply");
    assert_eq!(reply.status().as_u16(), 403);
    let status: Value = reply.json().await.expect("json");
    assert_eq!(
        status["message"],
        r#"nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope"#
    );
    // Groups without a user: a server error, as upstream.
    let reply = ask(
        cluster.token().to_string(),
        vec![("Impersonate-Group", "system:masters")],
    )
    .await
    .expect("reply");
    assert_eq!(reply.status().as_u16(), 500);
    let text = reply.text().await.expect("text");
    assert!(text.contains("without impersonating a user"), "{text}");
    // The service account may not impersonate.
    let token = mint(&admin, "mixcheck", "mixcheck").await;
    let reply = ask(token.clone(), vec![("Impersonate-User", "kubernetes-admin")])
        .await
        .expect("reply");
    assert_eq!(reply.status().as_u16(), 403);
    let status: Value = reply.json().await.expect("json");
    assert_eq!(
        status["message"],
        format!(
            r#"users "kubernetes-admin" is forbidden: User "{SA_USER}" cannot impersonate resource "users" in API group "" at the cluster scope"#
        )
    );
    let reply = ask(
        token,
        vec![("Impersonate-User", "system:serviceaccount:kube-system:default")],
    )
    .await
    .expect("reply");
    let status: Value = reply.json().await.expect("json");
    assert_eq!(
        status["message"],
        format!(
            r#"serviceaccounts "default" is forbidden: User "{SA_USER}" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system""#
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_bindings_grant_in_their_namespace_and_apply_needs_create() {
    let cluster = cluster("v1.32.3").await;
    for ns in ["team", "other"] {
        common::namespace(&cluster, ns);
    }
    let admin = common::kube_client(&cluster).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "team");
    let dev: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "dev"}})).expect("sa");
    accounts.create(&PostParams::default(), &dev).await.expect("sa");
    let objects = [
        // A ClusterRole granted in one namespace only, through a RoleBinding.
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "read-pods", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "dev"}]}),
        // A Role that may patch ConfigMaps but not create them.
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm-patcher", "namespace": "team"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "patch-cms", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-patcher"},
            "subjects": [{"kind": "ServiceAccount", "name": "dev", "namespace": "team"}]}),
        // A binding to a role that does not exist.
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "dangling", "namespace": "other"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gone"},
            "subjects": [{"kind": "ServiceAccount", "name": "dev", "namespace": "team"}]}),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("objects.yaml");
    let text: Vec<String> = objects.iter().map(|o| o.to_string()).collect();
    std::fs::write(&file, text.join("\n---\n")).expect("write");
    apply_file(&admin, &file).await;
    let token = mint(&admin, "team", "dev").await;
    let dev = client_with(&cluster, &token).await;

    Api::<Pod>::namespaced(dev.clone(), "team")
        .list(&ListParams::default())
        .await
        .expect("pods of its namespace");
    let denied = forbidden(
        "pods of another namespace",
        Api::<Pod>::namespaced(dev.clone(), "other")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        denied,
        r#"pods is forbidden: User "system:serviceaccount:team:dev" cannot list resource "pods" in API group "" in the namespace "other": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
    let denied = forbidden(
        "pods of every namespace",
        Api::<Pod>::all(dev.clone()).list(&ListParams::default()).await,
    );
    assert_eq!(
        denied,
        r#"pods is forbidden: User "system:serviceaccount:team:dev" cannot list resource "pods" in API group "" at the cluster scope"#
    );

    // Server-side apply that would create the object needs `create` too; upstream's message
    // is then the authorizer's (empty) reason alone.
    let cms: Api<ConfigMap> = Api::namespaced(dev.clone(), "team");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}});
    let denied = forbidden(
        "apply a new configmap",
        cms.patch("settings", &PatchParams::apply("dev"), &Patch::Apply(&cm))
            .await,
    );
    assert_eq!(denied, r#"configmaps "settings" is forbidden: "#);
    Api::<ConfigMap>::namespaced(admin.clone(), "team")
        .create(&PostParams::default(), &serde_json::from_value(cm.clone()).expect("cm"))
        .await
        .expect("created by the admin");
    let mut changed = cm.clone();
    changed["data"]["a"] = json!("2");
    let patched = cms
        .patch("settings", &PatchParams::apply("dev").force(), &Patch::Apply(&changed))
        .await
        .expect("apply to an existing configmap is a patch");
    assert_eq!(patched.data.and_then(|d| d.get("a").cloned()).as_deref(), Some("2"));

    // roleRef cannot change.
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        "team",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "RoleBinding")),
    );
    let change =
        json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}});
    match bindings
        .patch("read-pods", &PatchParams::default(), &Patch::Merge(&change))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(s.message.ends_with("cannot change roleRef"), "{}", s.message);
        }
        other => panic!("expected 422, got {other:?}"),
    }
}

/// A `GET` on a pod's exec: before 1.35 `get pods/exec` is enough; from 1.35 the WebSocket
/// upgrade also needs `create` (`AuthorizePodWebsocketUpgradeCreatePermission`).
#[rstest]
#[case::before_1_35("v1.32.3", None)]
#[case::from_1_35("v1.35.0", Some("create"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_upgrade_needs_create_from_1_35(#[case] version: &str, #[case] refused: Option<&str>) {
    let cluster = cluster(version).await;
    common::namespace(&cluster, "ex");
    let admin = common::kube_client(&cluster).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "ex");
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "viewer"}})).expect("sa");
    accounts.create(&PostParams::default(), &sa).await.expect("sa");
    let objects = [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "exec-get", "namespace": "ex"},
            "rules": [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "exec-get", "namespace": "ex"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-get"},
            "subjects": [{"kind": "ServiceAccount", "name": "viewer"}]}),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("objects.yaml");
    let text: Vec<String> = objects.iter().map(|o| o.to_string()).collect();
    std::fs::write(&file, text.join("\n---\n")).expect("write");
    apply_file(&admin, &file).await;
    let token = mint(&admin, "ex", "viewer").await;
    let reply = common::http_client(&cluster)
        .get(format!(
            "{}/api/v1/namespaces/ex/pods/ghost/exec?command=ls&stdout=true",
            cluster.url()
        ))
        .bearer_auth(&token)
        .send()
        .await
        .expect("reply");
    let code = reply.status().as_u16();
    let status: Value = reply.json().await.unwrap_or(Value::Null);
    match refused {
        None => assert_ne!(code, 403, "get suffices before 1.35: {status}"),
        Some(verb) => {
            assert_eq!(code, 403, "{status}");
            assert_eq!(
                status["message"],
                format!(
                    r#"pods "ghost" is forbidden: User "system:serviceaccount:ex:viewer" cannot {verb} resource "pods/exec" in API group "" in the namespace "ex""#
                )
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The real kubectl
// ---------------------------------------------------------------------------------------------

const KUBECTL_MISSING: &str =
    "kubectl is not installed or not on PATH: this test needs it (it is #[ignore]d by default; CI installs it)";

/// kubectl against one cluster, with a kubeconfig and a discovery cache of its own.
struct Kubectl {
    dir: tempfile::TempDir,
}

impl Kubectl {
    fn new(cluster: &Cluster) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        cluster
            .write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("kubeconfig written");
        Self { dir }
    }

    /// Runs kubectl; (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) => (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{KUBECTL_MISSING}"),
            Err(e) => panic!("cannot run kubectl {args:?}: {e}"),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let (code, stdout, stderr) = self.run(args);
        assert_eq!(code, Some(0), "kubectl {args:?} failed: {stderr}");
        stdout
    }
}

/// `kubectl auth can-i --as=…` per the ClusterRole: verb, resource, extra flags, answer.
#[rustfmt::skip]
const CAN_I: &[(&str, &str, &[&str], &str)] = &[
    ("create", "namespaces", &[], "yes"),
    ("delete", "namespaces", &[], "yes"),
    ("get", "namespaces", &[], "no"),
    ("list", "nodes", &[], "yes"),
    ("get", "nodes", &["--subresource=proxy"], "yes"),
    ("patch", "nodes", &[], "no"),
    ("get", "leases.coordination.k8s.io", &["-n", "kube-node-lease"], "yes"),
    ("update", "leases.coordination.k8s.io", &["-n", "kube-node-lease"], "no"),
    ("create", "pods", &["-n", "mixcheck-x"], "yes"),
    ("patch", "pods", &["-n", "mixcheck-x"], "yes"),
    // POD-TERMINATION-GRACE deletes its own pod and times it; created pods are deleted once
    // judged (deploy/rbac.yaml).
    ("delete", "pods", &["-n", "mixcheck-x"], "yes"),
    ("create", "pods", &["--subresource=exec", "-n", "mixcheck-x"], "yes"),
    ("get", "pods", &["--subresource=log", "-n", "kube-system"], "yes"),
    ("list", "secrets", &["-n", "kube-system"], "no"),
    ("create", "secrets", &["-n", "mixcheck-x"], "yes"),
    ("list", "daemonsets.apps", &["--all-namespaces"], "yes"),
    ("create", "deployments.apps", &["-n", "mixcheck-x"], "no"),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", &[], "no"),
    ("create", "selfsubjectaccessreviews.authorization.k8s.io", &[], "yes"),
    ("get", "/metrics", &[], "yes"),
    ("get", "/logs", &[], "no"),
];

#[test]
#[ignore = "needs kubectl"]
fn kubectl_create_token_and_auth_can_i_follow_the_cluster_role() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cluster = rt.block_on(cluster("v1.32.3"));
    let k = Kubectl::new(&cluster);
    let manifest = repo_file("deploy/rbac.yaml");
    let applied = k.ok(&["apply", "-f", &manifest.display().to_string()]);
    for line in [
        "namespace/mixcheck",
        "serviceaccount/mixcheck",
        "clusterrole.rbac.authorization.k8s.io/mixcheck",
        "clusterrolebinding.rbac.authorization.k8s.io/mixcheck",
    ] {
        assert!(applied.contains(line), "{line} in {applied}");
    }
    // The in-cluster Job runs as that ServiceAccount in that namespace.
    let job = k.ok(&["apply", "-f", &repo_file("deploy/job.yaml").display().to_string()]);
    assert!(job.contains("job.batch/mixcheck"), "{job}");
    let roles = k.ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "cluster-admin",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
        "mixcheck",
    ] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")),
            "{roles}"
        );
    }
    let wide = k.ok(&["get", "clusterrolebinding", "mixcheck", "-o", "wide"]);
    assert!(
        wide.contains("ClusterRole/mixcheck") && wide.contains("mixcheck/mixcheck"),
        "{wide}"
    );

    let token = k.ok(&["create", "token", "mixcheck", "-n", "mixcheck", "--duration=20m"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "{token}");
    assert!(token.starts_with("eyJ"), "{token}");
    k.ok(&["--token", token, "get", "nodes"]);
    let (code, _, stderr) = k.run(&["--token", token, "get", "secrets", "-n", "kube-system"]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&format!(
            r#"Error from server (Forbidden): secrets is forbidden: User "{SA_USER}" cannot list resource "secrets" in API group "" in the namespace "kube-system""#
        )),
        "{stderr}"
    );

    let as_sa = format!("--as={SA_USER}");
    for (verb, resource, extra, expected) in CAN_I {
        let mut args = vec!["auth", "can-i", as_sa.as_str(), verb, resource];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = k.run(&args);
        assert_eq!(stdout.trim(), *expected, "kubectl {args:?}: {stderr}");
        assert_eq!(code, Some(if *expected == "yes" { 0 } else { 1 }), "kubectl {args:?}");
    }
    let list = k.ok(&["auth", "can-i", "--list", &as_sa, "-n", "mixcheck-x"]);
    assert!(list.contains("pods/exec"), "{list}");
    assert!(list.contains("[/metrics]"), "{list}");
    assert!(!list.lines().any(|l| l.starts_with("*.*")), "{list}");
    rt.block_on(cluster.shutdown());
}
