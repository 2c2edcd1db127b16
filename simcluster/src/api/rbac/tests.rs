//! Unit tests of the RBAC evaluation: rule matching, subjects, binding scopes, reasons and the
//! rules a review lists.

use rstest::rstest;
use serde_json::{Value, json};

use super::*;

fn rule(v: Value) -> PolicyRule {
    PolicyRule::from_value(&v)
}

fn res(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
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

fn url(verb: &str, path: &str) -> Attributes {
    Attributes::NonResource {
        verb: verb.into(),
        path: path.into(),
    }
}

fn sa(ns: &str, name: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{ns}:{name}"),
        uid: "uid-1".into(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
            "system:authenticated".into(),
        ],
    }
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

#[rstest]
// verbs
#[case::verb(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("get", "", "pods", "", "a", ""), true)]
#[case::other_verb(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("list", "", "pods", "", "a", ""), false)]
#[case::verb_star(json!({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}), res("deletecollection", "", "pods", "", "a", ""), true)]
#[case::no_verbs(json!({"verbs": [], "apiGroups": ["*"], "resources": ["*"]}), res("get", "", "pods", "", "a", ""), false)]
// groups
#[case::core_group(json!({"verbs": ["list"], "apiGroups": [""], "resources": ["deployments"]}), res("list", "apps", "deployments", "", "a", ""), false)]
#[case::named_group(json!({"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]}), res("list", "apps", "deployments", "", "a", ""), true)]
#[case::group_star(json!({"verbs": ["list"], "apiGroups": ["*"], "resources": ["deployments"]}), res("list", "apps", "deployments", "", "a", ""), true)]
#[case::no_groups(json!({"verbs": ["list"], "resources": ["pods"]}), res("list", "", "pods", "", "a", ""), false)]
// resources and subresources
#[case::resource_star(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}), res("get", "", "pods", "log", "a", "p"), true)]
#[case::parent_is_not_sub(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("get", "", "pods", "log", "a", "p"), false)]
#[case::sub_exact(json!({"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}), res("create", "", "pods", "exec", "a", "p"), true)]
#[case::sub_is_not_parent(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}), res("get", "", "pods", "", "a", "p"), false)]
#[case::other_sub(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}), res("get", "", "pods", "exec", "a", "p"), false)]
#[case::star_sub(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]}), res("get", "apps", "deployments", "scale", "a", "d"), true)]
#[case::star_sub_other(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]}), res("get", "apps", "deployments", "status", "a", "d"), false)]
#[case::star_sub_needs_sub(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]}), res("get", "apps", "deployments", "", "a", "d"), false)]
#[case::star_sub_suffix_only(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}), res("get", "", "pods", "xstatus", "a", "p"), false)]
#[case::prefix_star_is_literal(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]}), res("get", "", "pods", "log", "a", "p"), false)]
// resource names
#[case::named(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"]}), res("get", "", "configmaps", "", "n", "b"), true)]
#[case::other_name(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}), res("get", "", "configmaps", "", "n", "c"), false)]
#[case::names_and_list(json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}), res("list", "", "configmaps", "", "n", ""), false)]
#[case::names_and_pinned_list(json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}), res("list", "", "configmaps", "", "n", "a"), true)]
// a resource rule never allows a URL and the reverse
#[case::resource_rule_url(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}), url("get", "/healthz"), false)]
#[case::url_rule_resource(json!({"verbs": ["get"], "nonResourceURLs": ["*"]}), res("get", "", "pods", "", "a", ""), false)]
// non-resource URLs
#[case::url_exact(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}), url("get", "/healthz"), true)]
#[case::url_exact_only(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}), url("get", "/healthz/etcd"), false)]
#[case::url_star(json!({"verbs": ["get"], "nonResourceURLs": ["*"]}), url("get", "/anything"), true)]
#[case::url_prefix(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}), url("get", "/apis/apps/v1"), true)]
#[case::url_prefix_needs_slash(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}), url("get", "/apis"), false)]
#[case::url_bare_prefix(json!({"verbs": ["get"], "nonResourceURLs": ["/api*"]}), url("get", "/apis"), true)]
#[case::url_stars_trimmed(json!({"verbs": ["get"], "nonResourceURLs": ["/logs/**"]}), url("get", "/logs/kubelet.log"), true)]
#[case::url_verb(json!({"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}), url("post", "/logs/x"), false)]
fn rules_match_like_upstream(#[case] rule_json: Value, #[case] attributes: Attributes, #[case] allowed: bool) {
    assert_eq!(
        rule(rule_json.clone()).allows(&attributes),
        allowed,
        "{rule_json} {attributes:?}"
    );
}

#[rstest]
#[case::user(json!({"kind": "User", "name": "alice"}), "", user("alice", &[]), true)]
#[case::other_user(json!({"kind": "User", "name": "alice"}), "", user("bob", &[]), false)]
#[case::group(json!({"kind": "Group", "name": "devs"}), "", user("bob", &["devs"]), true)]
#[case::user_is_not_group(json!({"kind": "Group", "name": "alice"}), "", user("alice", &[]), false)]
#[case::sa(json!({"kind": "ServiceAccount", "name": "r", "namespace": "m"}), "", sa("m", "r"), true)]
#[case::sa_other_ns(json!({"kind": "ServiceAccount", "name": "r", "namespace": "m"}), "", sa("x", "r"), false)]
#[case::sa_binding_ns(json!({"kind": "ServiceAccount", "name": "r"}), "m", sa("m", "r"), true)]
#[case::sa_no_ns_cluster(json!({"kind": "ServiceAccount", "name": "r"}), "", sa("m", "r"), false)]
#[case::sa_group(json!({"kind": "Group", "name": "system:serviceaccounts:m"}), "", sa("m", "r"), true)]
#[case::sa_as_user(json!({"kind": "User", "name": "system:serviceaccount:m:r"}), "", sa("m", "r"), true)]
#[case::unknown_kind(json!({"kind": "Robot", "name": "r"}), "", user("r", &[]), false)]
fn subjects_apply_like_upstream(
    #[case] subject: Value,
    #[case] binding_ns: &str,
    #[case] who: UserInfo,
    #[case] applies: bool,
) {
    let s = Subject {
        kind: text(&subject, "kind"),
        name: text(&subject, "name"),
        namespace: text(&subject, "namespace"),
    };
    assert_eq!(s.applies_to(&who, binding_ns), applies);
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    let mut meta = json!({"name": name});
    if !ns.is_empty() {
        meta["namespace"] = json!(ns);
    }
    json!({"metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": subjects})
}

/// A small cluster policy: a pod reader ClusterRole bound cluster-wide to `reader`, bound in
/// namespace `team` only (a RoleBinding to a ClusterRole) to `runner`, a Role in `team`, and
/// a binding whose ClusterRole does not exist.
fn policy() -> Policy {
    let pods = json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]}]);
    let cluster_roles = vec![
        cluster_role("pod-reader", pods),
        cluster_role("urls", json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])),
    ];
    let roles = vec![role(
        "team",
        "deployer",
        json!([{"verbs": ["create", "patch"], "apiGroups": ["apps"], "resources": ["deployments"]}]),
    )];
    let crbs = vec![
        binding(
            "",
            "readers",
            "ClusterRole",
            "pod-reader",
            json!([{"kind": "ServiceAccount", "name": "reader", "namespace": "ops"}]),
        ),
        binding(
            "",
            "metrics",
            "ClusterRole",
            "urls",
            json!([{"kind": "Group", "name": "monitoring"}]),
        ),
        binding(
            "",
            "dangling",
            "ClusterRole",
            "gone",
            json!([{"kind": "ServiceAccount", "name": "runner", "namespace": "team"}]),
        ),
    ];
    let rbs = vec![
        binding(
            "team",
            "read-here",
            "ClusterRole",
            "pod-reader",
            json!([{"kind": "ServiceAccount", "name": "runner"}]),
        ),
        binding(
            "team",
            "deploy",
            "Role",
            "deployer",
            json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "runner"}]),
        ),
    ];
    Policy::from_objects(&cluster_roles, &roles, &crbs, &rbs)
}

#[rstest]
#[case::cluster_binding(
    sa("ops", "reader"),
    res("list", "", "pods", "", "anywhere", ""),
    r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to ServiceAccount "reader/ops""#
)]
#[case::cluster_binding_cluster_scope(
    sa("ops", "reader"),
    res("list", "", "pods", "", "", ""),
    r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to ServiceAccount "reader/ops""#
)]
#[case::role_binding_to_cluster_role(
    sa("team", "runner"),
    res("get", "", "pods", "log", "team", "p"),
    r#"RBAC: allowed by RoleBinding "read-here/team" of ClusterRole "pod-reader" to ServiceAccount "runner/team""#
)]
#[case::role_binding_to_role(user("alice", &[]), res("patch", "apps", "deployments", "", "team", "web"),
    r#"RBAC: allowed by RoleBinding "deploy/team" of Role "deployer" to User "alice""#)]
#[case::group_binding(user("prom", &["monitoring"]), url("get", "/metrics"),
    r#"RBAC: allowed by ClusterRoleBinding "metrics" of ClusterRole "urls" to Group "monitoring""#)]
fn allowed_with_upstreams_reason(#[case] who: UserInfo, #[case] attributes: Attributes, #[case] reason: &str) {
    let d = policy().authorize(&who, &attributes);
    assert!(d.allowed && !d.denied, "{d:?}");
    assert_eq!(d.reason, reason);
}

/// The runner's dangling ClusterRoleBinding shows in each of its denials.
const GONE: &str = r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#;

#[rstest]
#[case::role_binding_is_namespaced(sa("team", "runner"), res("list", "", "pods", "", "other", ""), GONE)]
#[case::role_binding_not_cluster_wide(sa("team", "runner"), res("list", "", "pods", "", "", ""), GONE)]
#[case::verb_not_granted(sa("ops", "reader"), res("delete", "", "pods", "", "ops", "p"), "")]
#[case::subresource_not_granted(sa("ops", "reader"), res("create", "", "pods", "exec", "ops", "p"), "")]
#[case::other_account(sa("ops", "writer"), res("list", "", "pods", "", "ops", ""), "")]
#[case::same_name_other_namespace(sa("elsewhere", "reader"), res("list", "", "pods", "", "ops", ""), "")]
#[case::role_in_other_namespace(user("alice", &[]), res("patch", "apps", "deployments", "", "prod", "web"), "")]
#[case::url_not_granted(sa("ops", "reader"), url("get", "/metrics"), "")]
fn denied_without_a_binding(#[case] who: UserInfo, #[case] attributes: Attributes, #[case] reason: &str) {
    let d = policy().authorize(&who, &attributes);
    assert!(!d.allowed && !d.denied, "{d:?}");
    assert_eq!(d.reason, reason);
}

#[test]
fn a_missing_role_is_the_reason_of_a_denial_and_grants_nothing() {
    let runner = sa("team", "runner");
    let d = policy().authorize(&runner, &res("delete", "", "nodes", "", "", "n1"));
    assert!(!d.allowed);
    assert_eq!(
        d.reason,
        r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
    // What the other bindings grant still works.
    assert!(
        policy()
            .authorize(&runner, &res("list", "", "pods", "", "team", ""))
            .allowed
    );
    // Two missing roles: both, in brackets.
    let crbs = vec![
        binding("", "a", "ClusterRole", "x", json!([{"kind": "User", "name": "u"}])),
        binding("", "b", "ClusterRole", "y", json!([{"kind": "User", "name": "u"}])),
        binding("", "c", "ClusterRole", "x", json!([{"kind": "User", "name": "u"}])),
    ];
    let p = Policy::from_objects(&[], &[], &crbs, &[]);
    let d = p.authorize(&user("u", &[]), &url("get", "/x"));
    assert_eq!(
        d.reason,
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "x" not found, clusterrole.rbac.authorization.k8s.io "y" not found]"#
    );
    // A Role reference resolves in the binding's namespace.
    let rbs = vec![binding(
        "n",
        "r",
        "Role",
        "missing",
        json!([{"kind": "User", "name": "u"}]),
    )];
    let d = Policy::from_objects(&[], &[], &[], &rbs).authorize(&user("u", &[]), &res("get", "", "pods", "", "n", ""));
    assert_eq!(d.reason, r#"RBAC: role.rbac.authorization.k8s.io "missing" not found"#);
}

#[test]
fn rules_lists_what_applies_in_a_namespace() {
    let runner = sa("team", "runner");
    let rules = policy().rules(&runner, "team");
    let resources: Vec<Vec<String>> = rules.resource_rules.iter().map(|r| r.resources.clone()).collect();
    // RoleBindings in name order: `deploy`, then `read-here`.
    assert_eq!(
        resources,
        [
            vec!["deployments".to_string()],
            vec!["pods".to_string(), "pods/log".to_string()]
        ]
    );
    assert!(rules.non_resource_rules.is_empty());
    assert!(!rules.incomplete);
    assert_eq!(
        rules.evaluation_error,
        r#"clusterrole.rbac.authorization.k8s.io "gone" not found"#
    );
    // Elsewhere, the RoleBindings of `team` do not apply.
    let elsewhere = policy().rules(&runner, "other");
    assert!(elsewhere.resource_rules.is_empty());
    let prom = policy().rules(&user("prom", &["monitoring"]), "");
    assert_eq!(prom.non_resource_rules.len(), 1);
    assert_eq!(prom.non_resource_rules[0].non_resource_urls, ["/metrics"]);
}

fn bootstrap_policy(version: (u32, u32)) -> Policy {
    Policy::from_objects(
        &bootstrap::cluster_roles(),
        &[],
        &bootstrap::cluster_role_bindings(version),
        &[],
    )
}

#[rstest]
#[case::access_review(res("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true)]
#[case::rules_review(res("create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "", ""), true)]
#[case::self_review(res("create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), true)]
#[case::version(url("get", "/version"), true)]
#[case::healthz(url("get", "/healthz"), true)]
#[case::livez(url("get", "/livez"), true)]
#[case::readyz(url("get", "/readyz"), true)]
#[case::api(url("get", "/api"), true)]
#[case::api_v1(url("get", "/api/v1"), true)]
#[case::apis(url("get", "/apis"), true)]
#[case::apis_group(url("get", "/apis/apps/v1"), true)]
#[case::openapi(url("get", "/openapi/v3"), true)]
#[case::openapi_doc(url("get", "/openapi/v3/apis/apps/v1"), true)]
#[case::metrics(url("get", "/metrics"), false)]
#[case::logs(url("get", "/logs"), false)]
#[case::post_version(url("post", "/version"), false)]
#[case::pods(res("list", "", "pods", "", "default", ""), false)]
#[case::namespaces(res("list", "", "namespaces", "", "", ""), false)]
fn every_authenticated_identity_gets_the_bootstrap_policy(#[case] attributes: Attributes, #[case] allowed: bool) {
    let d = bootstrap_policy((1, 32)).authorize(&sa("mixcheck", "mixcheck"), &attributes);
    assert_eq!(d.allowed, allowed, "{attributes:?}: {d:?}");
}

#[test]
fn bootstrap_reasons_and_kubeadm_binding() {
    let d = bootstrap_policy((1, 32)).authorize(&sa("m", "m"), &url("get", "/version"));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
    );
    let kubeadm = user("someone", &["kubeadm:cluster-admins", "system:authenticated"]);
    let d = bootstrap_policy((1, 32)).authorize(&kubeadm, &res("delete", "", "nodes", "", "", "n"));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins""#
    );
    assert!(
        !bootstrap_policy((1, 28))
            .authorize(&kubeadm, &res("delete", "", "nodes", "", "", "n"))
            .allowed
    );
}

#[test]
fn the_authorizer_keeps_the_admin_cluster_admin_and_masters_privileged() {
    let store = Arc::new(Store::default());
    bootstrap(&store, (1, 32)).expect("bootstrap");
    store
        .create(
            resources::core("namespaces"),
            "",
            json!({"metadata": {"name": "default"}}),
        )
        .expect("namespace");
    let admin = UserInfo::kubeadm_admin((1, 32));
    let rbac = Rbac::new(store.clone(), admin.clone());
    let create = res("create", "", "pods", "", "default", "");
    assert_eq!(rbac.authorize(&admin, &create), ClusterAdmin.authorize(&admin, &create));
    assert_eq!(rbac.rules(&admin, "default"), ClusterAdmin.rules(&admin, "default"));
    let masters = user("root", &["system:masters", "system:authenticated"]);
    let d = rbac.authorize(&masters, &create);
    assert!(d.allowed);
    assert_eq!(d.reason, "");
    // A service account gets nothing beyond the bootstrap policy until it is bound.
    let runner = sa("default", "runner");
    assert!(!rbac.authorize(&runner, &create).allowed);
    store
        .create(
            rbac_resource("rolebindings"),
            "default",
            binding(
                "default",
                "runner-admin",
                "ClusterRole",
                "cluster-admin",
                json!([{"kind": "ServiceAccount", "name": "runner"}]),
            ),
        )
        .expect("binding");
    let d = rbac.authorize(&runner, &create);
    assert!(d.allowed, "the policy is re-read when a binding changes");
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "runner-admin/default" of ClusterRole "cluster-admin" to ServiceAccount "runner/default""#
    );
    assert!(
        !rbac
            .authorize(&runner, &res("create", "", "pods", "", "kube-system", ""))
            .allowed
    );
}
