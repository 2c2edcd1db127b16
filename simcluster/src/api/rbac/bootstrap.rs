//! The bootstrap RBAC policy a new cluster holds (`bootstrappolicy` upstream, the part every
//! identity relies on): `cluster-admin` for `system:masters` (and kubeadm's
//! `kubeadm:cluster-admins` from 1.29), and for every authenticated identity
//! `system:basic-user` (its own access and rules reviews), `system:discovery` (discovery,
//! OpenAPI, version, health) and `system:public-info-viewer` (version and health, also for the
//! unauthenticated).

use serde_json::{Value, json};

use crate::api::authorization::KUBEADM_CLUSTER_ADMINS;
use crate::store::Store;
use crate::store::api_error::ApiError;
use crate::store::rbac::GROUP;

/// `get` on the health and version endpoints, as both discovery roles grant them.
const PUBLIC_URLS: &[&str] = &["/livez", "/readyz", "/healthz", "/version", "/version/"];

fn bootstrap_meta(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"metadata": bootstrap_meta(name), "rules": rules})
}

fn binding(name: &str, role: &str, groups: &[&str], bootstrapped: bool) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
        .collect();
    let metadata = if bootstrapped {
        bootstrap_meta(name)
    } else {
        json!({"name": name})
    };
    json!({
        "metadata": metadata,
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles of a cluster.
pub(crate) fn cluster_roles() -> Vec<Value> {
    let discovery: Vec<&str> = PUBLIC_URLS
        .iter()
        .copied()
        .chain(["/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"])
        .collect();
    vec![
        cluster_role(
            "cluster-admin",
            json!([
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]),
        ),
        cluster_role(
            "system:basic-user",
            json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
            ]),
        ),
        cluster_role(
            "system:discovery",
            json!([{"verbs": ["get"], "nonResourceURLs": discovery}]),
        ),
        cluster_role(
            "system:public-info-viewer",
            json!([{"verbs": ["get"], "nonResourceURLs": PUBLIC_URLS}]),
        ),
    ]
}

/// The bootstrap ClusterRoleBindings of a cluster of version `(major, minor)`.
pub(crate) fn cluster_role_bindings(version: (u32, u32)) -> Vec<Value> {
    let mut out = vec![
        binding("cluster-admin", "cluster-admin", &["system:masters"], true),
        binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
            true,
        ),
        binding("system:discovery", "system:discovery", &["system:authenticated"], true),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
            true,
        ),
    ];
    if version >= (1, 29) {
        // kubeadm init creates it (not the API server): no bootstrapping label.
        out.push(binding(
            KUBEADM_CLUSTER_ADMINS,
            "cluster-admin",
            &[KUBEADM_CLUSTER_ADMINS],
            false,
        ));
    }
    out
}

/// Creates the bootstrap ClusterRoles and ClusterRoleBindings in a new cluster's store.
pub fn bootstrap(store: &Store, version: (u32, u32)) -> Result<(), ApiError> {
    for role in cluster_roles() {
        store.create(super::rbac_resource("clusterroles"), "", role)?;
    }
    for b in cluster_role_bindings(version) {
        store.create(super::rbac_resource("clusterrolebindings"), "", b)?;
    }
    Ok(())
}
