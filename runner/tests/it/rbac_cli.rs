//! Least privilege against the bundled cluster (which enforces RBAC for service-account
//! tokens): `deploy/rbac.yaml` applied, a token minted for its ServiceAccount (TokenRequest),
//! `mixcheck run --kubeconfig` with that token gets the same verdicts as with the admin's; with
//! one rule taken out of the ClusterRole, the preflight names the missing permission and exits
//! 3 before it creates anything.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;

use crate::cli::{mixcheck, text};
use crate::run_cli::Serve;

const RBAC: &str = include_str!("../../../deploy/rbac.yaml");

async fn admin(kubeconfig: &str) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

/// Creates every object of deploy/rbac.yaml (or replaces the ClusterRole with `role`).
async fn apply(client: &kube::Client, role: Option<&ClusterRole>) {
    let pp = PostParams::default();
    let docs: Vec<Value> = serde_saphyr::from_multiple(RBAC).expect("deploy/rbac.yaml parses");
    for doc in docs {
        match doc["kind"].as_str() {
            Some("Namespace") => {
                let ns: Namespace = serde_json::from_value(doc).expect("namespace");
                Api::<Namespace>::all(client.clone())
                    .create(&pp, &ns)
                    .await
                    .expect("create namespace");
            }
            Some("ServiceAccount") => {
                let sa: ServiceAccount = serde_json::from_value(doc).expect("sa");
                Api::<ServiceAccount>::namespaced(client.clone(), "mixcheck")
                    .create(&pp, &sa)
                    .await
                    .expect("create serviceaccount");
            }
            Some("ClusterRole") => {
                let parsed: ClusterRole = serde_json::from_value(doc).expect("clusterrole");
                let role = role.cloned().unwrap_or(parsed);
                Api::<ClusterRole>::all(client.clone())
                    .create(&pp, &role)
                    .await
                    .expect("create clusterrole");
            }
            Some("ClusterRoleBinding") => {
                let b: ClusterRoleBinding = serde_json::from_value(doc).expect("binding");
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&pp, &b)
                    .await
                    .expect("create clusterrolebinding");
            }
            other => panic!("deploy/rbac.yaml holds an unexpected kind {other:?}"),
        }
    }
}

/// A kubeconfig like the admin's, authenticated by a fresh token of the ServiceAccount.
async fn service_account_kubeconfig(client: &kube::Client, admin_kubeconfig: &str, out: &Path) {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let minted = Api::<ServiceAccount>::namespaced(client.clone(), "mixcheck")
        .create_token_request("mixcheck", &PostParams::default(), &request)
        .await
        .expect("TokenRequest");
    let token = minted.status.expect("status").token;
    let mut kc = kube::config::Kubeconfig::read_from(admin_kubeconfig).expect("kubeconfig");
    for user in &mut kc.auth_infos {
        if let Some(info) = user.auth_info.as_mut() {
            info.token = Some(token.clone().into());
        }
    }
    // JSON is YAML: kubeconfig readers take it.
    let mut v = serde_json::to_value(&kc).expect("kubeconfig json");
    for user in v["users"].as_array_mut().into_iter().flatten() {
        user["user"]["token"] = token.clone().into();
    }
    std::fs::write(out, serde_json::to_string_pretty(&v).expect("json")).expect("write kubeconfig");
}

fn verdicts(report: &Value) -> BTreeMap<String, String> {
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn run(dir: &Path, kubeconfig: &str, name: &str) -> (Option<i32>, String, Option<Value>) {
    let out = mixcheck(dir)
        .args(["run", "--quiet", "--kubeconfig", kubeconfig, "--report-dir", name])
        .args(crate::cli::SERVED_SETTLE)
        .output()
        .expect("run");
    let report = std::fs::read_to_string(dir.join(name).join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    (out.status.code(), text(&out), report)
}

#[test]
fn the_least_privilege_role_runs_everything_and_a_missing_rule_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let admin_kc = serve.kubeconfig();
    let sa_kc = dir.path().join("sa.kubeconfig");
    let client = runtime.block_on(async {
        let client = admin(&admin_kc).await;
        apply(&client, None).await;
        service_account_kubeconfig(&client, &admin_kc, &sa_kc).await;
        client
    });
    let sa_kc = sa_kc.display().to_string();

    let (admin_code, admin_out, admin_report) = run(dir.path(), &admin_kc, "admin");
    let (sa_code, sa_out, sa_report) = run(dir.path(), &sa_kc, "sa");
    let (admin_report, sa_report) = (
        admin_report.unwrap_or_else(|| panic!("admin run: {admin_out}")),
        sa_report.unwrap_or_else(|| panic!("service-account run: {sa_out}")),
    );
    assert!(sa_report["aborted"].is_null(), "{sa_out}\n{:#}", sa_report["aborted"]);
    assert_eq!(sa_code, admin_code, "{sa_out}");
    assert_eq!(
        verdicts(&sa_report),
        verdicts(&admin_report),
        "the same verdicts, cell by cell"
    );

    // The role without the exec rule: the preflight says so, exits 3, creates nothing.
    let role: ClusterRole = runtime.block_on(async {
        let api = Api::<ClusterRole>::all(client.clone());
        let mut role = api.get("mixcheck").await.expect("clusterrole");
        role.rules
            .as_mut()
            .expect("rules")
            .retain(|r| !r.resources.iter().flatten().any(|res| res == "pods/exec"));
        api.replace("mixcheck", &PostParams::default(), &role)
            .await
            .expect("replace");
        role
    });
    assert!(
        !role
            .rules
            .iter()
            .flatten()
            .any(|r| r.resources.iter().flatten().any(|x| x == "pods/exec")),
        "the exec rule is gone"
    );
    let run_namespaces = || {
        runtime.block_on(async {
            Api::<Namespace>::all(client.clone())
                .list(&ListParams::default().labels("app.kubernetes.io/managed-by=mixcheck"))
                .await
                .expect("namespaces")
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect::<std::collections::BTreeSet<String>>()
        })
    };
    let before = run_namespaces();
    let (code, out, report) = run(dir.path(), &sa_kc, "no-exec");
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("lack permissions") && out.contains("create pods/exec"),
        "{out}"
    );
    assert!(
        report.is_some_and(|r| !r["aborted"].is_null()),
        "an aborted run still writes results.json"
    );
    // The earlier runs' namespaces may still be terminating; the stopped run added none.
    let after = run_namespaces();
    assert!(
        after.is_subset(&before),
        "the preflight stopped the run before it created its namespace: {after:?} (before: {before:?})"
    );
}

const RBAC_NAMESPACED: &str = include_str!("../../../deploy/rbac-namespaced.yaml");

/// Creates every object of deploy/rbac-namespaced.yaml for namespace `ns` (which exists).
async fn apply_namespaced(client: &kube::Client, ns: &str) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let pp = PostParams::default();
    let text = RBAC_NAMESPACED.replace("mixcheck-ci", ns);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("deploy/rbac-namespaced.yaml parses");
    for doc in docs {
        match doc["kind"].as_str() {
            Some("ServiceAccount") => {
                let sa: ServiceAccount = serde_json::from_value(doc).expect("sa");
                Api::<ServiceAccount>::namespaced(client.clone(), ns)
                    .create(&pp, &sa)
                    .await
                    .expect("create serviceaccount");
            }
            Some("Role") => {
                let r: Role = serde_json::from_value(doc).expect("role");
                Api::<Role>::namespaced(client.clone(), ns)
                    .create(&pp, &r)
                    .await
                    .expect("create role");
            }
            Some("RoleBinding") => {
                let b: RoleBinding = serde_json::from_value(doc).expect("rolebinding");
                Api::<RoleBinding>::namespaced(client.clone(), ns)
                    .create(&pp, &b)
                    .await
                    .expect("create rolebinding");
            }
            Some("ClusterRole") => {
                let r: ClusterRole = serde_json::from_value(doc).expect("clusterrole");
                Api::<ClusterRole>::all(client.clone())
                    .create(&pp, &r)
                    .await
                    .expect("create clusterrole");
            }
            Some("ClusterRoleBinding") => {
                let b: ClusterRoleBinding = serde_json::from_value(doc).expect("binding");
                Api::<ClusterRoleBinding>::all(client.clone())
                    .create(&pp, &b)
                    .await
                    .expect("create clusterrolebinding");
            }
            other => panic!("deploy/rbac-namespaced.yaml holds an unexpected kind {other:?}"),
        }
    }
}

/// Every object in namespace `ns` of the kinds a run creates, as `kind/name`.
async fn objects_in(client: &kube::Client, ns: &str) -> Vec<String> {
    use k8s_openapi::api::core::v1::{Pod, Secret, Service};
    let lp = ListParams::default();
    let mut out = Vec::new();
    for p in Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .expect("pods")
        .items
    {
        if p.metadata.deletion_timestamp.is_none() {
            out.push(format!("pod/{}", p.metadata.name.unwrap_or_default()));
        }
    }
    for s in Api::<Service>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .expect("services")
        .items
    {
        out.push(format!("service/{}", s.metadata.name.unwrap_or_default()));
    }
    for s in Api::<Secret>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .expect("secrets")
        .items
    {
        out.push(format!("secret/{}", s.metadata.name.unwrap_or_default()));
    }
    // The network-policy suite's policies (issue #38) go with the run too.
    for p in Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .expect("networkpolicies")
        .items
    {
        out.push(format!("networkpolicy/{}", p.metadata.name.unwrap_or_default()));
    }
    out
}

#[test]
fn a_namespace_only_identity_runs_in_its_namespace_and_leaves_it_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let admin_kc = serve.kubeconfig();
    let sa_kc = dir.path().join("team.kubeconfig");
    let ns = "team-a";
    let (client, before) = runtime.block_on(async {
        let client = admin(&admin_kc).await;
        let namespace: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("ns");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
        apply_namespaced(&client, ns).await;
        // A token of the namespace's ServiceAccount (the kubeconfig helper mints it in
        // `mixcheck`; here the account lives in the team's namespace).
        let request = TokenRequest {
            spec: TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            },
            ..TokenRequest::default()
        };
        let token = Api::<ServiceAccount>::namespaced(client.clone(), ns)
            .create_token_request("mixcheck", &PostParams::default(), &request)
            .await
            .expect("TokenRequest")
            .status
            .expect("status")
            .token;
        let mut v: Value =
            serde_json::to_value(kube::config::Kubeconfig::read_from(&admin_kc).expect("kc")).expect("json");
        for user in v["users"].as_array_mut().into_iter().flatten() {
            user["user"]["token"] = token.clone().into();
        }
        std::fs::write(&sa_kc, serde_json::to_string_pretty(&v).expect("json")).expect("write");
        let before = objects_in(&client, ns).await;
        (client, before)
    });
    let sa_kc = sa_kc.display().to_string();

    let (admin_code, admin_out, admin_report) = run(dir.path(), &admin_kc, "admin");
    let out = mixcheck(dir.path())
        .args([
            "run",
            "--quiet",
            "--kubeconfig",
            &sa_kc,
            "--namespace",
            ns,
            "--report-dir",
            "team",
        ])
        .args(crate::cli::SERVED_SETTLE)
        .output()
        .expect("run");
    let team_out = text(&out);
    let team_report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("team/results.json")).unwrap_or_else(|_| panic!("{team_out}")),
    )
    .expect("results.json");
    let admin_report = admin_report.unwrap_or_else(|| panic!("admin run: {admin_out}"));
    assert!(
        team_report["aborted"].is_null(),
        "{team_out}\n{:#}",
        team_report["aborted"]
    );
    // Each permission it goes without is named once, with what it costs, and the facts it
    // would give are reported unread with that reason.
    for missing in [
        "get nodes/proxy",
        "list apps/daemonsets (all namespaces)",
        "list configmaps (all namespaces)",
    ] {
        assert_eq!(
            team_out.matches(&format!("no permission to {missing}:")).count(),
            1,
            "{missing}: {team_out}"
        );
    }
    assert_eq!(
        team_report["facts"]["unread"]["kubelet configuration (configz)"], "no permission to get nodes/proxy",
        "{:#}",
        team_report["facts"]
    );
    // Every flow cell of the default run is judged as with the admin's credentials.
    let (admin_v, team_v) = (verdicts(&admin_report), verdicts(&team_report));
    let flows: Vec<&Value> = admin_report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| {
            ["network", "dns"].contains(&c["category"].as_str().unwrap_or_default())
                && c["coordinates"]["destination"].as_str().is_some_and(|d| !d.is_empty())
        })
        .collect();
    assert!(!flows.is_empty(), "the default run has flow cells");
    for c in flows {
        let id = c["id"].as_str().unwrap_or_default();
        assert_eq!(team_v.get(id), admin_v.get(id), "flow cell {id}\n{team_out}");
    }
    assert!(matches!(admin_code, Some(0)), "{admin_out}");
    // The namespace is still there and holds none of the run's objects.
    let after = runtime.block_on(async {
        let still = Api::<Namespace>::all(client.clone()).get(ns).await;
        assert!(
            still.is_ok_and(|n| n.metadata.deletion_timestamp.is_none()),
            "namespace {ns} kept"
        );
        objects_in(&client, ns).await
    });
    assert_eq!(after, before, "the run deleted what it created in {ns}, and only that");

    // What a killed run left there goes with `mixcheck cleanup -n`, and nothing else does.
    runtime.block_on(async {
        use k8s_openapi::api::core::v1::Pod;
        let pods = Api::<Pod>::namespaced(client.clone(), ns);
        for (name, labels) in [
            ("left-behind", serde_json::json!({"app.kubernetes.io/managed-by": "mixcheck"})),
            ("the-teams-own", serde_json::json!({"app": "web"})),
        ] {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
            }))
            .expect("pod");
            pods.create(&PostParams::default(), &pod).await.expect("create pod");
        }
    });
    let out = mixcheck(dir.path())
        .args(["cleanup", "--kubeconfig", &sa_kc, "-n", ns])
        .output()
        .expect("cleanup");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let left = runtime.block_on(objects_in(&client, ns));
    assert!(left.contains(&"pod/the-teams-own".to_string()), "{left:?}");
    assert!(!left.contains(&"pod/left-behind".to_string()), "{left:?}");
}
