//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac` upstream): what an identity may do is
//! what the Roles and ClusterRoles bound to it allow, read from the stored Role, ClusterRole,
//! RoleBinding and ClusterRoleBinding objects.
//!
//! - The admin identity of the kubeconfig stays cluster-admin: it is answered by
//!   [`ClusterAdmin`], with the same reasons and rules as before RBAC. Members of
//!   `system:masters` are allowed everything without a reason (the privileged-group authorizer).
//! - Everyone else: the ClusterRoleBindings, then the RoleBindings of the request's namespace,
//!   whose subjects name the user (`User`), one of its groups (`Group`) or its service account
//!   (`ServiceAccount`, namespace defaulting to the binding's); each binding's role's rules are
//!   tried in order and the first that allows the request decides, with upstream's reason
//!   (`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to ServiceAccount "sa/ns"`).
//!   A RoleBinding to a ClusterRole grants that role's rules in the binding's namespace only.
//!   A binding whose role does not exist grants nothing; a denied request then carries
//!   `RBAC: clusterrole.rbac.authorization.k8s.io "r" not found` as its reason.
//! - A rule matches with upstream's helpers: verbs (or `*`), API groups (or `*`), resources (or
//!   `*`, `pods/exec` for a subresource, `*/scale` for a subresource of any resource), resource
//!   names (none: any), non-resource URLs (exact, `*`, or a prefix ending in `*`).
//! - The bootstrap policy every cluster has ([`bootstrap`]): `cluster-admin`,
//!   `system:basic-user`, `system:discovery`, `system:public-info-viewer` and their
//!   ClusterRoleBindings (to `system:authenticated`; `system:masters` for `cluster-admin`), and
//!   kubeadm's `kubeadm:cluster-admins` binding from 1.29, created as real objects when the
//!   cluster starts (`kubectl get clusterroles` lists them). Aggregated roles (`admin`, `edit`,
//!   `view`) are not created, and a ClusterRole's `aggregationRule` is stored but not evaluated.
//! - Writes of roles and bindings are not checked for privilege escalation (`escalate`, `bind`):
//!   whoever may create a binding may bind any role.

mod bootstrap;
#[cfg(test)]
mod tests;

pub use bootstrap::bootstrap;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::api::authorization::{
    Attributes, Authorizer, ClusterAdmin, Decision, NonResourceRule, ResourceRule, Rules, SYSTEM_MASTERS, UserInfo,
};
use crate::store::Store;
use crate::store::resources::{self, ResourceType};

/// One rule of a Role or ClusterRole (`rbacv1.PolicyRule`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

impl PolicyRule {
    fn from_value(v: &Value) -> Self {
        Self {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// `RuleAllows`: whether this rule allows the request.
    pub(crate) fn allows(&self, attributes: &Attributes) -> bool {
        match attributes {
            Attributes::Resource {
                verb,
                group,
                resource,
                subresource,
                name,
                ..
            } => {
                let combined = if subresource.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}/{subresource}")
                };
                verb_matches(self, verb)
                    && api_group_matches(self, group)
                    && resource_matches(self, &combined, subresource)
                    && resource_name_matches(self, name)
            }
            Attributes::NonResource { verb, path } => verb_matches(self, verb) && non_resource_url_matches(self, path),
        }
    }
}

pub(crate) fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

pub(crate) fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == "*" || g == group)
}

/// `combined` is `pods` or `pods/exec`; a rule resource `*/exec` matches any `exec` subresource.
pub(crate) fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// No resource names: any name (also none); otherwise the request's name must be listed.
pub(crate) fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// Exact, `*`, or a prefix: `/apis/*` matches `/apis/apps/v1` (and `/apis/`, not `/apis`).
pub(crate) fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls
        .iter()
        .any(|u| u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*'))))
}

/// A subject of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl Subject {
    /// `appliesToUser`; `binding_ns` is "" for a ClusterRoleBinding.
    pub(crate) fn applies_to(&self, user: &UserInfo, binding_ns: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.username == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_ns
                } else {
                    self.namespace.as_str()
                };
                !ns.is_empty() && user.username == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }

    /// `describeSubject`: `User "u"`, `ServiceAccount "name/namespace"`.
    fn describe(&self, binding_ns: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_ns
                } else {
                    &self.namespace
                };
                format!("{} {:?}", self.kind, format!("{}/{ns}", self.name))
            }
            _ => format!("{} {:?}", self.kind, self.name),
        }
    }
}

/// A RoleBinding (namespace set) or a ClusterRoleBinding (namespace "").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    pub name: String,
    pub namespace: String,
    pub role_kind: String,
    pub role_name: String,
    pub subjects: Vec<Subject>,
}

impl Binding {
    fn from_value(v: &Value) -> Self {
        let meta = v.get("metadata").cloned().unwrap_or(Value::Null);
        let role_ref = v.get("roleRef").cloned().unwrap_or(Value::Null);
        Self {
            name: text(&meta, "name"),
            namespace: text(&meta, "namespace"),
            role_kind: text(&role_ref, "kind"),
            role_name: text(&role_ref, "name"),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| Subject {
                    kind: text(s, "kind"),
                    name: text(s, "name"),
                    namespace: text(s, "namespace"),
                })
                .collect(),
        }
    }

    /// The clusterRoleBindingDescriber / roleBindingDescriber text for `subject`.
    fn describe(&self, subject: &Subject) -> String {
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {:?} of {} {:?} to {}",
                self.name,
                self.role_kind,
                self.role_name,
                subject.describe("")
            )
        } else {
            format!(
                "RoleBinding {:?} of {} {:?} to {}",
                format!("{}/{}", self.name, self.namespace),
                self.role_kind,
                self.role_name,
                subject.describe(&self.namespace)
            )
        }
    }
}

/// The RBAC objects of a cluster at one moment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    /// By (namespace, name).
    roles: HashMap<(String, String), Vec<PolicyRule>>,
    cluster_role_bindings: Vec<Binding>,
    /// Sorted by namespace, then name.
    role_bindings: Vec<Binding>,
}

/// What a rule visit sees: a rule with the binding that grants it, or a resolution error.
enum Visit<'a> {
    Rule(&'a Binding, &'a Subject, &'a PolicyRule),
    Error(String),
}

/// `utilerrors.NewAggregate(…).Error()`: one message as is, several (deduplicated) in brackets.
fn aggregate(errors: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for e in errors {
        if !unique.contains(&e.as_str()) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl Policy {
    /// A policy from the objects' JSON (as stored).
    pub(crate) fn from_objects(cluster_roles: &[Value], roles: &[Value], crbs: &[Value], rbs: &[Value]) -> Self {
        let rules = |v: &Value| -> Vec<PolicyRule> {
            v.get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(PolicyRule::from_value)
                .collect()
        };
        let meta = |v: &Value, key: &str| v.get("metadata").map(|m| text(m, key)).unwrap_or_default();
        let mut role_bindings: Vec<Binding> = rbs.iter().map(Binding::from_value).collect();
        role_bindings.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        Self {
            cluster_roles: cluster_roles.iter().map(|r| (meta(r, "name"), rules(r))).collect(),
            roles: roles
                .iter()
                .map(|r| ((meta(r, "namespace"), meta(r, "name")), rules(r)))
                .collect(),
            cluster_role_bindings: crbs.iter().map(Binding::from_value).collect(),
            role_bindings,
        }
    }

    fn from_store(store: &Store) -> Self {
        let objects = |plural: &str| -> Vec<Value> {
            let (items, _) = store.list(rbac_resource(plural), None);
            items.iter().map(|o| o.value().clone()).collect()
        };
        Self::from_objects(
            &objects("clusterroles"),
            &objects("roles"),
            &objects("clusterrolebindings"),
            &objects("rolebindings"),
        )
    }

    /// `GetRoleReferenceRules`.
    fn role_rules(&self, binding: &Binding) -> Result<&[PolicyRule], String> {
        match binding.role_kind.as_str() {
            "Role" => self
                .roles
                .get(&(binding.namespace.clone(), binding.role_name.clone()))
                .map(Vec::as_slice)
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {:?} not found", binding.role_name)),
            "ClusterRole" => self
                .cluster_roles
                .get(&binding.role_name)
                .map(Vec::as_slice)
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        binding.role_name
                    )
                }),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// `VisitRulesFor`: every rule that applies to `user` in `namespace` (cluster-wide bindings
    /// first), until `visitor` returns false.
    fn visit(&self, user: &UserInfo, namespace: &str, visitor: &mut dyn FnMut(Visit<'_>) -> bool) {
        let in_namespace = self
            .role_bindings
            .iter()
            .filter(|b| !namespace.is_empty() && b.namespace == namespace);
        for binding in self.cluster_role_bindings.iter().chain(in_namespace) {
            let Some(subject) = binding.subjects.iter().find(|s| s.applies_to(user, &binding.namespace)) else {
                continue;
            };
            match self.role_rules(binding) {
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                }
                Ok(rules) => {
                    for rule in rules {
                        if !visitor(Visit::Rule(binding, subject, rule)) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The RBAC decision for `user` (no special identities).
    pub(crate) fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let namespace = match attributes {
            Attributes::Resource { namespace, .. } => namespace.as_str(),
            Attributes::NonResource { .. } => "",
        };
        let mut reason = None;
        let mut errors = Vec::new();
        self.visit(user, namespace, &mut |visit| match visit {
            Visit::Rule(binding, subject, rule) if rule.allows(attributes) => {
                reason = Some(format!("RBAC: allowed by {}", binding.describe(subject)));
                false
            }
            Visit::Rule(..) => true,
            Visit::Error(e) => {
                errors.push(e);
                true
            }
        });
        match reason {
            Some(reason) => Decision {
                allowed: true,
                denied: false,
                reason,
            },
            None => Decision {
                allowed: false,
                denied: false,
                reason: if errors.is_empty() {
                    String::new()
                } else {
                    format!("RBAC: {}", aggregate(&errors))
                },
            },
        }
    }

    /// Every rule that applies to `user` in `namespace`, as a rules review lists them.
    pub(crate) fn rules(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut out = Rules::default();
        let mut errors = Vec::new();
        self.visit(user, namespace, &mut |visit| {
            match visit {
                Visit::Rule(_, _, rule) => {
                    if !rule.resources.is_empty() {
                        out.resource_rules.push(ResourceRule {
                            verbs: rule.verbs.clone(),
                            api_groups: rule.api_groups.clone(),
                            resources: rule.resources.clone(),
                            resource_names: rule.resource_names.clone(),
                        });
                    }
                    if !rule.non_resource_urls.is_empty() {
                        out.non_resource_rules.push(NonResourceRule {
                            verbs: rule.verbs.clone(),
                            non_resource_urls: rule.non_resource_urls.clone(),
                        });
                    }
                }
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        out.evaluation_error = aggregate(&errors);
        out
    }
}

fn rbac_resource(plural: &str) -> &'static ResourceType {
    resources::named(crate::store::rbac::GROUP, plural)
}

/// The cluster's authorizer: [`ClusterAdmin`] for the admin identity, RBAC for everyone else.
#[derive(Debug)]
pub struct Rbac {
    store: Arc<Store>,
    admin: UserInfo,
    /// The policy as of a store revision of the RBAC objects (rebuilt when one changes).
    cache: RwLock<Option<(u64, Arc<Policy>)>>,
}

impl Rbac {
    pub fn new(store: Arc<Store>, admin: UserInfo) -> Self {
        Self {
            store,
            admin,
            cache: RwLock::new(None),
        }
    }

    fn policy(&self) -> Arc<Policy> {
        let kinds = ["clusterroles", "roles", "clusterrolebindings", "rolebindings"].map(rbac_resource);
        let revision = self.store.changed_at(&kinds);
        if let Some((rev, policy)) = self.cache.read().unwrap_or_else(|p| p.into_inner()).as_ref()
            && *rev == revision
        {
            return policy.clone();
        }
        let policy = Arc::new(Policy::from_store(&self.store));
        *self.cache.write().unwrap_or_else(|p| p.into_inner()) = Some((revision, policy.clone()));
        policy
    }
}

impl Authorizer for Rbac {
    fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        if *user == self.admin {
            return ClusterAdmin.authorize(user, attributes);
        }
        if user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
            return Decision {
                allowed: true,
                denied: false,
                reason: String::new(),
            };
        }
        self.policy().authorize(user, attributes)
    }

    fn rules(&self, user: &UserInfo, namespace: &str) -> Rules {
        if *user == self.admin {
            return ClusterAdmin.rules(user, namespace);
        }
        self.policy().rules(user, namespace)
    }
}
