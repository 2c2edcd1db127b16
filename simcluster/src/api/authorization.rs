//! Who a request is and what it may do: the identity behind a bearer token and the authorizer
//! that answers for it (the seam `SelfSubjectAccessReview` and `SelfSubjectRulesReview` ask).
//!
//! The admin's bearer token is bound to `cluster-admin` the way kubeadm binds its admin: from
//! Kubernetes 1.29 user `kubernetes-admin` in group `kubeadm:cluster-admins` (allowed by RBAC
//! through the ClusterRoleBinding of that name), before that the same user in `system:masters`
//! (allowed by the privileged-group authorizer, which gives no reason). [`ClusterAdmin`] allows
//! everything; the cluster runs the RBAC authorizer of [`crate::api::rbac`], which answers for
//! the admin as [`ClusterAdmin`] does and evaluates Roles and bindings for everyone else.

use std::fmt;

/// An authenticated identity (`user.Info` upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The admin identity of a kubeadm cluster of version `(major, minor)`.
    pub fn kubeadm_admin(version: (u32, u32)) -> Self {
        let group = if version >= (1, 29) {
            KUBEADM_CLUSTER_ADMINS
        } else {
            SYSTEM_MASTERS
        };
        Self {
            username: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec![group.into(), "system:authenticated".into()],
        }
    }
}

pub(crate) const KUBEADM_CLUSTER_ADMINS: &str = "kubeadm:cluster-admins";
pub(crate) const SYSTEM_MASTERS: &str = "system:masters";

/// What a request wants to do (`authorizer.Attributes` upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attributes {
    /// A verb on a resource, e.g. `create pods` in namespace `default`.
    Resource {
        verb: String,
        group: String,
        version: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
    },
    /// A verb on a non-resource URL, e.g. `get /healthz`.
    NonResource { verb: String, path: String },
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Explicitly denied (no other authorizer may allow it).
    pub denied: bool,
    /// Why, in the deciding authorizer's words ("" when it gives none).
    pub reason: String,
}

/// One rule of a rules review: verbs on resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

/// One rule of a rules review: verbs on non-resource URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// What a user may do in a namespace (`SelfSubjectRulesReview` status).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// The rules may not be all (some authorizer cannot list its rules).
    pub incomplete: bool,
    /// What went wrong resolving the rules, e.g. a binding to a missing role ("" when nothing).
    pub evaluation_error: String,
}

/// Decides requests for identities; RBAC or a webhook would be other implementations.
pub trait Authorizer: fmt::Debug + Send + Sync {
    fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision;
    /// Every rule that applies to `user` in `namespace`.
    fn rules(&self, user: &UserInfo, namespace: &str) -> Rules;
}

/// The admin's authorizer: the kubeconfig's identity is bound to `cluster-admin`, so every
/// request is allowed, with the reason kubeadm's binding gives. The cluster's RBAC authorizer
/// ([`crate::api::rbac::Rbac`]) answers for the admin through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterAdmin;

impl Authorizer for ClusterAdmin {
    fn authorize(&self, user: &UserInfo, _attributes: &Attributes) -> Decision {
        let reason = if user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
            // The privileged-group authorizer decides before RBAC and says nothing.
            String::new()
        } else if let Some(group) = user.groups.iter().find(|g| *g == KUBEADM_CLUSTER_ADMINS) {
            format!(
                r#"RBAC: allowed by ClusterRoleBinding "{group}" of ClusterRole "cluster-admin" to Group "{group}""#
            )
        } else {
            format!(
                r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to User "{}""#,
                user.username
            )
        };
        Decision {
            allowed: true,
            denied: false,
            reason,
        }
    }

    fn rules(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let resource = |verbs: &[&str], groups: &[&str], resources: &[&str]| ResourceRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            resource_names: Vec::new(),
        };
        // cluster-admin, then what system:basic-user and system:public-info-viewer give every
        // authenticated user (the bootstrap policy), as the RBAC rule resolver lists them.
        Rules {
            resource_rules: vec![
                resource(&["*"], &["*"], &["*"]),
                resource(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                resource(&["create"], &["authentication.k8s.io"], &["selfsubjectreviews"]),
            ],
            non_resource_rules: vec![
                NonResourceRule {
                    verbs: strings(&["*"]),
                    non_resource_urls: strings(&["*"]),
                },
                NonResourceRule {
                    verbs: strings(&["get"]),
                    non_resource_urls: strings(&[
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ]),
                },
            ],
            incomplete: false,
            evaluation_error: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn create_pods() -> Attributes {
        Attributes::Resource {
            verb: "create".into(),
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: String::new(),
            namespace: "default".into(),
            name: String::new(),
        }
    }

    #[rstest]
    #[case::kubeadm_1_29((1, 32), "kubeadm:cluster-admins", r#"RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins""#)]
    #[case::kubeadm_before_1_29((1, 14), "system:masters", "")]
    fn the_admin_is_allowed_everything(#[case] version: (u32, u32), #[case] group: &str, #[case] reason: &str) {
        let admin = UserInfo::kubeadm_admin(version);
        assert_eq!(admin.username, "kubernetes-admin");
        assert_eq!(admin.groups, [group, "system:authenticated"]);
        let d = ClusterAdmin.authorize(&admin, &create_pods());
        assert!(d.allowed && !d.denied);
        assert_eq!(d.reason, reason);
        let nr = Attributes::NonResource {
            verb: "get".into(),
            path: "/logs".into(),
        };
        assert!(ClusterAdmin.authorize(&admin, &nr).allowed);
    }

    #[test]
    fn the_admin_rules_are_everything() {
        let rules = ClusterAdmin.rules(&UserInfo::kubeadm_admin((1, 32)), "default");
        assert_eq!(rules.resource_rules[0].verbs, ["*"]);
        assert_eq!(rules.resource_rules[0].api_groups, ["*"]);
        assert_eq!(rules.resource_rules[0].resources, ["*"]);
        assert_eq!(rules.non_resource_rules[0].non_resource_urls, ["*"]);
        assert!(!rules.incomplete);
    }
}
